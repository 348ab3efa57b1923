import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { typed } from "../../route-declarations/declare.js";
import { BuildParams, Id, MAX_INT32 } from "../../route-declarations/params.js";
import { html, type SafeHtml } from "../html.js";
import { renderPage } from "../layout.js";
import { buildPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { type BuildParams as BuildRoute, loadBuildPage, mayUnblock } from "./build-data.js";
import { renderBuildHeader } from "./build-header.js";
import { renderJobs, retryForm } from "./build-jobs.js";
import { jobLogPath } from "./build-paths.js";
import { ANNOTATION_PAGES, renderAnnotations, renderArtifacts, renderMetaData } from "./build-sections.js";
import type { UnblockAttempt } from "./build-unblock-form.js";
import { renderJobPanel } from "./job-panel.js";

/** The build page's query: a job to show open with its log, and a page of artifacts. */
export const BuildPageQuery = Type.Object({
  job: Type.Optional(Id),
  artifacts_page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32 })),
  /** A page of the build's annotations (of 100). */
  annotations_page: Type.Optional(Type.Integer({ minimum: 1, maximum: ANNOTATION_PAGES })),
});

/** What an action that did not go through adds to the page it answers with. */
export interface BuildPageNotice {
  /** The HTTP status of the answer (the REST twin's for the same refusal). */
  status: number;
  /** What went wrong, in the builds service's words. */
  error: string;
  /** An unblock refused for its values: the form shows them with the problems. */
  unblock?: UnblockAttempt;
}

/** The scripts the build page runs (web/assets/): opening jobs in place, and live updates. */
export const BUILD_PAGE_SCRIPTS: readonly string[] = ["build-page.js", "live.js"];

/**
 * Answers a build's page (docs/pages.md#builds): its header, annotations, jobs in step order (the one named by
 * `?job=` open with its log), artifacts and meta-data. An action that was refused answers with it too, the reason
 * shown above the jobs.
 */
export async function sendBuildPage(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: WebDeps,
  params: BuildRoute,
  query: { job?: string; artifacts_page?: number; annotations_page?: number } = {},
  notice?: BuildPageNotice,
): Promise<FastifyReply> {
  const data = await loadBuildPage(request, deps, params, {
    artifacts: query.artifacts_page,
    annotations: query.annotations_page,
  });
  const { build, orgSlug, pipeline } = data;
  const now = Date.now();
  const csrf = deps.csrfField(request);
  const openJob = query.job ? build.jobs.find((j) => j.id === query.job && j.type === "script") : undefined;
  const opened = openJob && {
    jobId: openJob.id,
    panel: await renderJobPanel(deps, {
      ref: { pipelineId: pipeline.id, number: build.number, jobId: openJob.id },
      logPath: jobLogPath(orgSlug, pipeline.slug, build.number, openJob.id),
      canReadEnv: data.canReadEnv,
      annotationsPage: 1,
    }),
  };
  const jobs = renderJobs(build.jobs, {
    orgSlug,
    pipelineSlug: pipeline.slug,
    buildNumber: build.number,
    canBuild: data.canBuild,
    mayUnblock: (job) => mayUnblock(job, data),
    csrf,
    now,
    rows: deps.jobRows,
    version: data.buildVersion,
    ...(opened ? { opened } : {}),
    ...(notice?.unblock ? { unblock: notice.unblock } : {}),
  });
  const error: SafeHtml | string = notice
    ? html`<div class="form-errors" role="alert"><p>${notice.error}</p></div>`
    : "";
  const body = html`<div class="build" data-build="${build.id}" data-state="${build.state}">
${renderBuildHeader(data, csrf, now)}
${error}
${renderAnnotations(data.annotations, {
  id: "annotations",
  title: "Annotations",
  pageHref: (page) => `${buildPath(orgSlug, pipeline.slug, build.number)}?annotations_page=${page}#annotations-title`,
})}
<section class="build-jobs" aria-labelledby="jobs-title">
<h2 id="jobs-title">Jobs</h2>
${data.canBuild ? retryForm(csrf) : ""}
${jobs}
</section>
${renderArtifacts(data)}
${renderMetaData(build.metaData)}
</div>`;
  const title = `${pipeline.name} #${build.number}`;
  return reply
    .status(notice?.status ?? 200)
    .type("text/html; charset=utf-8")
    .send(
      renderPage(request, {
        title,
        org: { slug: orgSlug, name: data.orgName },
        section: "pipelines",
        body,
        scripts: BUILD_PAGE_SCRIPTS,
      }),
    );
}

/** GET /{org}/{pipeline}/builds/{number}: a build's page, for people who may read its pipeline (404 otherwise). */
export function buildPageRoutes(scope: FastifyInstance, deps: WebDeps): void {
  typed(scope).get(
    "/:org/:pipeline/builds/:number",
    { preHandler: deps.requireSignIn, schema: { params: BuildParams, querystring: BuildPageQuery } },
    async (request, reply) => sendBuildPage(request, reply, deps, request.params, request.query),
  );
}
