import { Readable } from "node:stream";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { Int, Str } from "../render/schemas.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { JobParams } from "../route-declarations/params.js";
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
 * `{url, content, size, header_times}`, `…/log.txt` as plain text, and `DELETE …/log`. Both reads stream the log
 * from the builds service to the client, so a large log never sits whole in the gateway's memory.
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
        summary: "A job's log as JSON",
        tags,
        params: JobParams,
        response: responses(200, Type.Unsafe<unknown>(JobLogSchema)),
      },
    },
    async (request, reply) => {
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
