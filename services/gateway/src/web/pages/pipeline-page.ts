import type { Build } from "@conveyor/proto/builds";
import type { Organization } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { type Static, Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { organizationAccess } from "../../auth/authenticate.js";
import { LIST_BUILD_STATES } from "../../rest/build-query.js";
import { typed } from "../../route-declarations/declare.js";
import { BOUNDS, MAX_INT32, PipelineParams, text } from "../../route-declarations/params.js";
import { durationOf, personName, shortCommit, stateBadge, stateLabel, timeTag } from "../format.js";
import { type HtmlValue, html, type SafeHtml } from "../html.js";
import { renderPage } from "../layout.js";
import { buildPath, orgPath, pipelinePath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { type NewBuildForm, renderNewBuildForm } from "./new-build-form.js";
import { pagerLinks } from "./pager.js";

/** Builds per page of a pipeline's page. */
export const BUILDS_PER_PAGE = 30;

/** The pipeline page's filters and page, as its GET form sends them. */
export const PipelinePageQuery = Type.Object({
  branch: Type.Optional(text(BOUNDS.ref)),
  state: Type.Optional(Type.Union(LIST_BUILD_STATES.map((s) => Type.Literal(s)))),
  mine: Type.Optional(Type.Boolean()),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32 })),
});
export type PipelinePageFilters = Static<typeof PipelinePageQuery>;

/** What the pipeline page shows. */
export interface PipelineView {
  organization: Pick<Organization, "slug" | "name">;
  pipeline: Pipeline;
  builds: readonly Build[];
  hasMore: boolean;
  filters: PipelinePageFilters;
  /** Whether the person may build it: the new build form is shown only then. */
  canBuild: boolean;
  /** The new build form as the person left it, with the service's objections, after a refused create. */
  form?: NewBuildForm;
  /** The request's URL, for the pager's links. */
  url: string;
  /** The form's hidden CSRF input. */
  csrf: SafeHtml;
}

/**
 * Serves the pipeline page: GET /{org}/{pipeline} here, and the new build action's answer to a refused create
 * (actions/create-build-action.ts) with the form as the person filled it. The pipeline must be one the person may
 * read (404 otherwise, as REST); its builds are one ListBuilds call.
 */
export function createPipelinePage(deps: WebDeps) {
  const { clients } = deps;
  return async function servePipelinePage(
    request: FastifyRequest,
    reply: FastifyReply,
    params: { org: string; pipeline: string },
    filters: PipelinePageFilters,
    form?: { values: NewBuildForm; status: number },
  ) {
    const access = organizationAccess(request, params.org);
    const organization = access.organization as Organization;
    const { pipeline, canBuild } = await deps.pipelineAccess.pipeline(request, access, params.pipeline, "read");
    const res = await clients.builds.listBuilds({
      organizationIds: [organization.id],
      pipelineId: pipeline.id,
      branches: filters.branch ? [filters.branch] : [],
      states: filters.state ? [filters.state] : [],
      creatorId: filters.mine ? (request.principal?.user?.id ?? "") : "",
      page: filters.page ?? 1,
      perPage: BUILDS_PER_PAGE,
      excludeJobs: true,
    });
    const body = renderPipeline({
      organization,
      pipeline,
      builds: res.builds,
      hasMore: res.hasMore,
      filters,
      canBuild,
      form: form?.values,
      url: request.url,
      csrf: deps.csrfField(request),
    });
    return reply
      .status(form?.status ?? 200)
      .type("text/html; charset=utf-8")
      .send(renderPage(request, { title: pipeline.name, org: organization, section: "pipelines", body }));
  };
}

/** GET /{org}/{pipeline}: the pipeline's builds, newest first, filtered and paged, and the new build form. */
export function pipelinePage(scope: FastifyInstance, deps: WebDeps): void {
  const serve = createPipelinePage(deps);
  typed(scope).get(
    "/:org/:pipeline",
    { preHandler: deps.requireSignIn, schema: { params: PipelineParams, querystring: PipelinePageQuery } },
    async (request, reply) => serve(request, reply, request.params, request.query),
  );
}

/** One build of the list: number and state, message, branch and commit, who and when, how long. */
function buildRow(org: string, pipeline: Pipeline, build: Build, now: number): SafeHtml {
  const duration = durationOf(build.startedAt, build.finishedAt, now);
  return html`<li class="build-row">
    <div>
      <a class="build-number" href="${buildPath(org, pipeline.slug, build.number)}">#${build.number}</a>
      <div>${stateBadge(build.state)}</div>
    </div>
    <div>
      <p class="build-message"><a href="${buildPath(org, pipeline.slug, build.number)}">${build.message.split("\n")[0] || "(no message)"}</a></p>
      <p class="build-meta">
        <span><span class="visually-hidden">Branch </span><code>${build.branch}</code></span>
        <span><span class="visually-hidden">Commit </span><code>${shortCommit(build.commit)}</code></span>
        <span>${personName(build.creator) || personName(build.author)}</span>
        ${build.source ? html`<span>from ${build.source}</span>` : null}
      </p>
    </div>
    <div class="build-meta">
      ${timeTag(build.createdAt)}
      ${duration ? html`<span>${duration}</span>` : null}
    </div>
  </li>`;
}

/** The filters form: branch, state and "my builds", sent as a GET so a filtered list has its own address. */
function filterForm(org: string, pipeline: Pipeline, filters: PipelinePageFilters): SafeHtml {
  const option = (value: string, label: string) =>
    html`<option value="${value}"${filters.state === value || (!filters.state && value === "") ? html` selected` : null}>${label}</option>`;
  return html`<form class="filter-form" method="get" action="${pipelinePath(org, pipeline.slug)}" aria-label="Filter builds">
  <div class="field">
    <label for="filter-branch">Branch</label>
    <input type="text" id="filter-branch" name="branch" value="${filters.branch ?? ""}" autocomplete="off">
  </div>
  <div class="field">
    <label for="filter-state">State</label>
    <select id="filter-state" name="state">
      ${option("", "Any state")}
      ${LIST_BUILD_STATES.map((s) => option(s, stateLabel(s)))}
    </select>
  </div>
  <label class="checkbox"><input type="checkbox" name="mine" value="true"${filters.mine ? html` checked` : null}> My builds</label>
  <button type="submit">Filter</button>
</form>`;
}

/** The pipeline page's content. */
export function renderPipeline(view: PipelineView, now = Date.now()): SafeHtml {
  const org = view.organization.slug;
  const p = view.pipeline;
  const filtered = Boolean(view.filters.branch || view.filters.state || view.filters.mine);
  const list: HtmlValue =
    view.builds.length === 0
      ? html`<p class="empty panel">${filtered ? "No builds match these filters." : "No builds yet."}</p>`
      : html`<ol class="builds" aria-label="Builds, newest first">${view.builds.map((b) => buildRow(org, p, b, now))}</ol>`;
  return html`<nav aria-label="Breadcrumbs"><ol class="breadcrumbs">
  <li><a href="${orgPath(org)}">${view.organization.name}</a></li>
  <li><a href="${pipelinePath(org, p.slug)}" aria-current="page">${p.name}</a></li>
</ol></nav>
<div class="page-head">
  <div>
    <h1>${p.name}</h1>
    ${p.description ? html`<p class="muted">${p.description}</p>` : null}
    <p class="build-meta">
      ${p.repository ? html`<span>Repository <code>${p.repository}</code></span>` : null}
      ${p.defaultBranch ? html`<span>Default branch <code>${p.defaultBranch}</code></span>` : null}
    </p>
  </div>
</div>
${view.canBuild ? renderNewBuildForm(org, p, view.form, view.csrf) : null}
<h2 id="builds-heading">Builds</h2>
${filterForm(org, p, view.filters)}
${list}
${pagerLinks(view.url, view.filters.page ?? 1, view.hasMore, { prev: "Newer", next: "Older" })}`;
}
