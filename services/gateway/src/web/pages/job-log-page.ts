import { Readable } from "node:stream";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply } from "fastify";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { JobParams } from "../../route-declarations/params.js";
import { stateBadge } from "../format.js";
import { html, trusted } from "../html.js";
import { renderPage } from "../layout.js";
import { openLog } from "../log/log-reader.js";
import { renderWholeLog } from "../log/whole-log.js";
import { buildPath, orgPath, pipelinePath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { buildAccess, mayReadEnv } from "./build-data.js";
import { jobTitle } from "./build-jobs.js";
import { jobAnchorPath, jobLogPath } from "./build-paths.js";
import { ANNOTATION_PAGES } from "./build-sections.js";
import { renderJobPanel } from "./job-panel.js";

const LogQuery = Type.Object({
  /** The whole log, numbered, instead of its tail. */
  all: Type.Optional(Type.Boolean()),
  /** Only the job's panel, for the build page's script to put in place. */
  fragment: Type.Optional(Type.Boolean()),
  /** A page of the job's annotations (of 100). */
  annotations_page: Type.Optional(Type.Integer({ minimum: 1, maximum: ANNOTATION_PAGES })),
});

/** Where the streamed log goes in the page: a comment no escaped text can contain. */
const LOG_MARK = "<!--conveyor:whole-log-->";

/** Aborts when the answer ends, finished or cut by the client going away, so that the log's reads stop with it. */
function closedSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => controller.abort());
  return controller.signal;
}

/**
 * A job's log for people (docs/pages.md#logs): `…/jobs/{id}/log` is its page, with the tail first (the last 2 MiB,
 * read from that offset), `?all=1` the whole log streamed with line numbers, `?fragment=1` only the job's panel
 * (the build page's script opens a job with it); `…/jobs/{id}/log.txt` the raw log. Access is the build page's:
 * reading the pipeline (404 otherwise).
 */
export function jobLogRoutes(scope: FastifyInstance, deps: WebDeps): void {
  const route = typed(scope);
  const path = "/:org/:pipeline/builds/:number/jobs/:job/log";

  route.get(
    path,
    { preHandler: deps.requireSignIn, schema: { params: JobParams, querystring: LogQuery } },
    async (request, reply) => {
      const { access, pipeline } = await buildAccess(request, deps, request.params);
      const { number, job: jobId } = request.params;
      const orgSlug = access.organization?.slug ?? request.params.org;
      const ref = { pipelineId: pipeline.id, number, jobId };
      const logPath = jobLogPath(orgSlug, pipeline.slug, number, jobId);
      const canReadEnv = mayReadEnv(request);
      const annotationsPage = request.query.annotations_page ?? 1;
      if (request.query.fragment) {
        const panel = await renderJobPanel(deps, { ref, logPath, canReadEnv, annotationsPage });
        return reply.type("text/html; charset=utf-8").header("cache-control", "no-store").send(panel.value);
      }
      const { build } = await deps.clients.builds.getBuild({
        pipelineId: pipeline.id,
        number,
        includeRetriedJobs: true,
      });
      const job = build?.jobs.find((j) => j.id === jobId);
      if (!build || !job) throw new HttpError(404, "No job found");
      const title = jobTitle(job);
      const head = html`<ol class="breadcrumbs">
  <li><a href="${orgPath(orgSlug)}">${access.organization?.name ?? orgSlug}</a></li>
  <li><a href="${pipelinePath(orgSlug, pipeline.slug)}">${pipeline.name}</a></li>
  <li><a href="${jobAnchorPath(orgSlug, pipeline.slug, number, jobId)}">Build #${number}</a></li>
  <li aria-current="page">${title}</li>
</ol>
<div class="page-head"><h1>${title}</h1><p>${stateBadge(job.state)}</p></div>`;
      const page = (body: ReturnType<typeof html>) =>
        renderPage(request, {
          title: `${title} · ${pipeline.name} #${number}`,
          org: { slug: orgSlug, name: access.organization?.name ?? orgSlug },
          section: "pipelines",
          body: html`${head}${body}`,
        });
      reply.type("text/html; charset=utf-8");
      if (!request.query.all) {
        const panel = await renderJobPanel(deps, { ref, logPath, canReadEnv, annotationsPage });
        return reply.send(page(panel));
      }
      const [before, after] = page(
        html`<p class="log-bar"><a href="${logPath}">Show the end only</a> <a href="${logPath}.txt" download>Download</a> <a href="${buildPath(orgSlug, pipeline.slug, number)}">Back to the build</a></p>
<div class="log" id="log-${jobId}" data-job="${jobId}" tabindex="0" role="region" aria-label="Log">${trusted(LOG_MARK)}</div>`,
      ).split(LOG_MARK);
      const signal = closedSignal(reply);
      const pieces = renderWholeLog((req, opts) => deps.clients.builds.streamJobLog(req, opts), ref, signal);
      // The first piece comes before the answer starts, so that a log that cannot be read is an error page.
      const first = await pieces.next();
      async function* body() {
        yield before ?? "";
        if (!first.done) yield first.value;
        yield* pieces;
        yield after ?? "";
      }
      return reply.send(Readable.from(body()));
    },
  );

  route.get(
    `${path}.txt`,
    { preHandler: deps.requireSignIn, schema: { params: JobParams } },
    async (request, reply) => {
      const { pipeline } = await buildAccess(request, deps, request.params);
      const { number, job: jobId } = request.params;
      const { pieces } = await openLog(
        (req, opts) => deps.clients.builds.streamJobLog(req, opts),
        { pipelineId: pipeline.id, number, jobId },
        {},
        closedSignal(reply),
      );
      async function* bytes() {
        for await (const piece of pieces) yield piece.bytes;
      }
      return reply
        .type("text/plain; charset=utf-8")
        .header(
          "content-disposition",
          `inline; filename="${pipeline.slug}-${number}-${jobId.replace(/[^\w-]/g, "")}.log"`,
        )
        .send(Readable.from(bytes()));
    },
  );
}
