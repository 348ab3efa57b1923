import { Readable } from "node:stream";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { Int, Str } from "../render/schemas.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { JobParams } from "../route-declarations/params.js";
import { renderWholeLog } from "../web/log/whole-log.js";
import type { RouteDeps } from "./route-deps.js";

/**
 * The JSON log (go-buildkite's JobLog). The route streams it as it reads it, so this schema documents the answer
 * and the fuzz suite checks it; it does not serialize it.
 */
const JobLogSchema = Type.Object({ url: Str, content: Str, size: Int, header_times: Type.Array(Int) });
const tags = ["jobs"];

/** The header times as REST returns them: epoch milliseconds, in the order of the lines they head. */
export function headerTimesList(times: Record<string, string>): number[] {
  return Object.entries(times)
    .map(([line, at]) => [Number(line), Date.parse(at)] as const)
    .filter(([line, ms]) => Number.isFinite(line) && Number.isFinite(ms))
    .sort((a, b) => a[0] - b[0])
    .map(([, ms]) => ms);
}

/**
 * A job's log as the builds service streams it: its info first, then its bytes. The bytes are never gathered in
 * memory: `bytes` is a stream to pipe into a response.
 */
async function openLog(
  deps: RouteDeps,
  request: FastifyRequest & { params: { org: string; pipeline: string; number: number; job: string } },
) {
  const access = organizationAccess(request, request.params.org);
  const number = request.params.number;
  const { pipeline } = await deps.pipelineAccess.pipeline(request, access, request.params.pipeline, "read");
  const stream = deps.clients.builds.streamJobLog({ pipelineId: pipeline.id, number, jobId: request.params.job });
  const iterator = stream[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done || first.value.part.case !== "info") throw new Error("the log stream did not start with its info");
  const info = first.value.part.value;
  async function* bytes() {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (next.value.part.case === "data") yield next.value.part.value;
    }
  }
  return { info, bytes };
}

/** How much a client's Accept header takes a media type: the q of the most specific range that matches it, 0 if none. */
function acceptance(accept: string, type: string): number {
  const [major] = type.split("/");
  let best = -1;
  let q = 0;
  for (const part of accept.split(",")) {
    const [range = "", ...params] = part.trim().toLowerCase().split(";");
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === "*/*" ? 0 : -1;
    if (specificity <= best) continue;
    const given = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    const value = given ? Number(given.slice(2)) : 1;
    best = specificity;
    q = Number.isFinite(value) ? value : 0;
  }
  return q;
}

/**
 * Whether a client asks for the log as HTML: its Accept header takes text/html more than application/json (a
 * browser's does). No header, `*\/*`, or a tie keeps the JSON answer every API client has always had.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  return acceptance(accept, "text/html") > acceptance(accept, "application/json");
}

/**
 * The headers of the HTML log: it is only the log's lines (no script, no outside resource), and may not be framed
 * or sniffed as anything else. Log colours beyond the 16 are style attributes (see web/security-headers.ts).
 */
const HTML_LOG_HEADERS = {
  "content-security-policy": "default-src 'none'; style-src-attr 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
};

/** JSON string content of a stream of UTF-8 bytes, escaped piece by piece (a piece may end inside a character). */
async function* jsonEscaped(bytes: AsyncIterable<Uint8Array>) {
  const decoder = new TextDecoder("utf-8");
  for await (const piece of bytes) {
    const text = decoder.decode(piece, { stream: true });
    if (text !== "") yield JSON.stringify(text).slice(1, -1);
  }
  const rest = decoder.decode();
  if (rest !== "") yield JSON.stringify(rest).slice(1, -1);
}

/**
 * A job's log over REST (Buildkite's jobs API; go-buildkite's JobsService): `…/log` as JSON
 * `{url, content, size, header_times}`, or as HTML when the client's Accept asks for it (the pages' rendering of
 * the whole log, docs/compatibility.md#jobs-and-logs), `…/log.txt` as plain text, and `DELETE …/log`. Every read streams the
 * log from the builds service to the client, so a large log never sits whole in the gateway's memory.
 */
export function jobLogRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const path = "/v2/organizations/:org/pipelines/:pipeline/builds/:number/jobs/:job/log";

  const route = typed(app);

  route.get(
    path,
    {
      config: { scope: "read_build_logs" },
      schema: {
        operationId: "getJobLog",
        summary: "A job's log as JSON, or as HTML (its lines rendered) when Accept asks for text/html",
        tags,
        params: JobParams,
        produces: ["application/json", "text/html"],
        response: responses(200, Type.Unsafe<unknown>(JobLogSchema)),
      },
    },
    async (request, reply) => {
      // One URL, two forms: caches must keep them apart.
      reply.header("vary", "Accept");
      if (prefersHtml(request.headers.accept)) {
        const access = organizationAccess(request, request.params.org);
        const { pipeline } = await deps.pipelineAccess.pipeline(request, access, request.params.pipeline, "read");
        const ref = { pipelineId: pipeline.id, number: request.params.number, jobId: request.params.job };
        const controller = new AbortController();
        reply.raw.once("close", () => controller.abort());
        const stream = deps.clients.builds.streamJobLog.bind(deps.clients.builds);
        const pieces = renderWholeLog(stream, ref, controller.signal);
        // The first piece is read before answering, so that a log that cannot be read is the usual error answer.
        const first = await pieces.next();
        async function* html() {
          if (!first.done) yield first.value;
          yield* pieces;
        }
        return reply.type("text/html; charset=utf-8").headers(HTML_LOG_HEADERS).send(Readable.from(html()));
      }
      const { info, bytes } = await openLog(deps, request);
      const url = `${deps.publicUrl}${request.url.split("?")[0]}`;
      async function* body() {
        yield `{"url":${JSON.stringify(url)},"content":"`;
        yield* jsonEscaped(bytes());
        yield `","size":${Number(info.size)},"header_times":${JSON.stringify(headerTimesList(info.headerTimes))}}`;
      }
      return reply.type("application/json; charset=utf-8").send(Readable.from(body()));
    },
  );

  route.get(
    `${path}.txt`,
    {
      config: { scope: "read_build_logs" },
      schema: {
        operationId: "getJobLogText",
        summary: "A job's log as plain text",
        tags,
        params: JobParams,
        produces: ["text/plain"],
        response: responses(200, Type.Unsafe<unknown>({ type: "string", description: "the log's bytes" })),
      },
    },
    async (request, reply) => {
      const { bytes } = await openLog(deps, request);
      return reply.type("text/plain; charset=utf-8").send(Readable.from(bytes()));
    },
  );

  route.delete(
    path,
    {
      config: { scope: "write_build_logs" },
      schema: {
        operationId: "deleteJobLog",
        summary: "Delete a job's log",
        tags,
        params: JobParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const number = request.params.number;
      const { pipeline } = await deps.pipelineAccess.pipeline(request, access, request.params.pipeline, "build");
      await deps.clients.builds.deleteJobLog({ pipelineId: pipeline.id, number, jobId: request.params.job });
      return reply.status(204).send();
    },
  );
}
