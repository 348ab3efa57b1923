import type { Organization, OrganizationAccess } from "@conveyor/proto/identity";
import { ArchiveFilter, type Pipeline } from "@conveyor/proto/pipelines";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { organizationAccess } from "../../auth/authenticate.js";
import { typed } from "../../route-declarations/declare.js";
import { BOUNDS, MAX_INT32, OrgParams, text } from "../../route-declarations/params.js";
import { shortCommit, stateBadge, stateClass, stateLabel, timeTag } from "../format.js";
import { type HtmlValue, html, type SafeHtml, trusted } from "../html.js";
import { renderPage } from "../layout.js";
import { buildPath, orgPath, pipelinePath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { pagerLinks } from "./pager.js";
import { createPipelineLists } from "./pipeline-lists.js";
import { type BuildSummary, createRecentBuildsReader, type RecentBuilds } from "./recent-builds.js";

/** Pipelines per page of the organization page. */
export const PIPELINES_PER_PAGE = 30;
/** The most pipelines a name filter looks through (pages of 100): an organization's pipelines, in practice all. */
const FILTER_SCAN = 1000;

const Query = Type.Object({
  name: Type.Optional(text(BOUNDS.name)),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32 })),
});

/** One page of the pipelines a person may read, and how many there are. */
interface PipelinePage {
  pipelines: Pipeline[];
  total: number;
}

/**
 * GET /{org}: the organization's pipelines the person may read (the REST API's policy: administrators and members
 * of teams-disabled organizations read all, otherwise their teams decide), each with its default branch's latest
 * state and its last builds as small bars, filtered by name. One ListPipelines call and one batch of build reads
 * (recent-builds.ts) per page, whatever the number of pipelines.
 */
export function organizationPage(scope: FastifyInstance, deps: WebDeps): void {
  const { clients } = deps;
  const recentBuildsOf = createRecentBuildsReader(clients);
  const rows = createRowCache();
  const listPipelines = createPipelineLists((req) => clients.pipelines.listPipelines(req), deps.pipelineChanges);

  /** The pipelines of the organization the person may read, one page, with a name filter when asked. */
  const pipelinesOf = async (
    request: FastifyRequest,
    access: OrganizationAccess,
    name: string,
    page: number,
  ): Promise<PipelinePage> => {
    const visible = access.allPipelines ? undefined : await deps.pipelineAccess.accessible(request, [access]);
    if (visible && visible.pipelines.size === 0) return { pipelines: [], total: 0 };
    const list = (p: number, perPage: number) =>
      listPipelines({
        organizationId: access.organization?.id ?? "",
        archiveFilter: ArchiveFilter.ACTIVE,
        page: p,
        perPage,
        pipelineIds: visible ? [...visible.pipelines.keys()] : [],
      });
    if (name === "") {
      const res = await list(page, PIPELINES_PER_PAGE);
      return { pipelines: res.pipelines, total: res.totalCount };
    }
    // ListPipelines has no name filter: the filter reads the organization's pipelines and keeps the matches.
    const needle = name.toLowerCase();
    const matches: Pipeline[] = [];
    for (let p = 1; (p - 1) * 100 < FILTER_SCAN; p++) {
      const res = await list(p, 100);
      for (const pipeline of res.pipelines) if (matchesName(pipeline, needle)) matches.push(pipeline);
      if (p * 100 >= res.totalCount) break;
    }
    const start = (page - 1) * PIPELINES_PER_PAGE;
    return { pipelines: matches.slice(start, start + PIPELINES_PER_PAGE), total: matches.length };
  };

  typed(scope).get(
    "/:org",
    { preHandler: deps.requireSignIn, schema: { params: OrgParams, querystring: Query } },
    async (request, reply) => {
      const { org } = request.params;
      const query = request.query;
      const access = organizationAccess(request, org);
      const organization = access.organization as Organization;
      const name = (query.name ?? "").trim();
      const page = query.page ?? 1;
      const { pipelines, total } = await pipelinesOf(request, access, name, page);
      const builds = pipelines.length > 0 ? await recentBuildsOf(organization.id, pipelines) : new Map();
      const body = renderOrganization({ organization, pipelines, builds, total, name, page, url: request.url }, rows);
      return reply
        .type("text/html; charset=utf-8")
        .send(renderPage(request, { title: organization.name, org: organization, section: "pipelines", body }));
    },
  );
}

/** Whether a pipeline's name or slug contains the (lower-case) filter text. */
function matchesName(pipeline: Pipeline, needle: string): boolean {
  return pipeline.name.toLowerCase().includes(needle) || pipeline.slug.includes(needle);
}

/** What the organization page shows. */
export interface OrganizationView {
  organization: Pick<Organization, "slug" | "name">;
  pipelines: readonly Pipeline[];
  builds: ReadonlyMap<string, RecentBuilds>;
  total: number;
  name: string;
  page: number;
  /** The request's URL, for the pager's links. */
  url: string;
}

/** A build's one-line description: a bar's title, which is also its accessible name. */
function buildTitle(build: BuildSummary): string {
  const title = build.title.length > 100 ? `${build.title.slice(0, 99)}…` : build.title;
  return `#${build.number} ${stateLabel(build.state)} on ${build.branch}: ${title}`;
}

/** The last builds as bars, oldest on the left; out of the tab order, since the pipeline's page lists them. */
function bars(org: string, pipeline: Pipeline, recent: readonly BuildSummary[]): HtmlValue {
  if (recent.length === 0) return html`<p class="muted">No builds yet</p>`;
  const items = [...recent]
    .reverse()
    .map(
      (b) =>
        html`<li><a class="bar ${stateClass(b.state)}" href="${buildPath(org, pipeline.slug, b.number)}" title="${buildTitle(b)}" tabindex="-1"></a></li>`,
    );
  return html`<ol class="bars" aria-label="Last ${recent.length} builds of ${pipeline.name}">${items}</ol>`;
}

/** The default branch's latest build: its state, number, message and when. */
function latest(org: string, pipeline: Pipeline, build: BuildSummary | undefined): HtmlValue {
  if (!build) {
    return html`<p class="muted">${pipeline.defaultBranch ? html`No builds on ${pipeline.defaultBranch}` : "No builds"}</p>`;
  }
  return html`<div>
      ${stateBadge(build.state)}
      <a href="${buildPath(org, pipeline.slug, build.number)}">#${build.number}</a>
      <span class="muted">${build.branch} · ${shortCommit(build.commit)}</span>
      <p class="build-meta">${build.who} ${timeTag(build.createdAt)}</p>
    </div>`;
}

/** One pipeline's row: its name and description, its default branch's latest build, its last builds as bars. */
function pipelineRow(org: string, p: Pipeline, b: RecentBuilds | undefined): string {
  return html`<li class="pipeline-row" data-name="${p.name} ${p.slug}">
    <div>
      <a class="pipeline-name" href="${pipelinePath(org, p.slug)}">${p.name}</a>
      ${p.description ? html`<p class="pipeline-description">${p.description}</p>` : null}
    </div>
    ${latest(org, p, b?.latestDefault)}
    ${bars(org, p, b?.recent ?? [])}
  </li>`.value;
}

/** What a row's HTML may take, per gateway (rows are kept by what they show). */
const ROW_BYTES = 16 * 1024 * 1024;

/**
 * Rendered rows, kept by everything they show: the organization's slug, the pipeline's fields the row shows, and the
 * version of its builds (recent-builds.ts), so that an unchanged pipeline is not rendered again (30 bars with their
 * titles each). Rows whose builds have no version are never kept.
 */
export function createRowCache() {
  const kept = new LRUCache<string, string>({
    maxSize: ROW_BYTES,
    sizeCalculation: (row, key) => 2 * (row.length + key.length),
  });
  return {
    row(org: string, p: Pipeline, b: RecentBuilds | undefined): string {
      if (!b?.version) return pipelineRow(org, p, b);
      const key = [org, p.id, p.slug, p.name, p.description ?? "", p.defaultBranch, b.version].join("\0");
      let row = kept.get(key);
      if (row === undefined) {
        row = pipelineRow(org, p, b);
        kept.set(key, row);
      }
      return row;
    },
  };
}

/** A row cache that keeps nothing. */
const NO_ROWS = { row: pipelineRow };

/** The organization page's content: the filter form, the pipelines with their builds, the pager. */
export function renderOrganization(
  view: OrganizationView,
  rows: Pick<ReturnType<typeof createRowCache>, "row"> = NO_ROWS,
): SafeHtml {
  const org = view.organization.slug;
  const items = view.pipelines.map((p) => trusted(rows.row(org, p, view.builds.get(p.id))));
  const count = `${view.total} ${view.total === 1 ? "pipeline" : "pipelines"}`;
  const list =
    view.pipelines.length === 0
      ? html`<p class="empty panel">${view.name ? html`No pipelines match “${view.name}”.` : "No pipelines yet."}</p>`
      : html`<ul class="pipelines" id="pipeline-list">${items}</ul>`;
  return html`<div class="page-head">
  <h1>Pipelines</h1>
  <p class="muted">${view.organization.name}</p>
</div>
<form class="filter-form" method="get" action="${orgPath(org)}" role="search">
  <div class="field">
    <label for="pipeline-filter">Filter pipelines by name</label>
    <input type="search" id="pipeline-filter" name="name" value="${view.name}" data-filter="pipeline-list" autocomplete="off">
  </div>
  <button type="submit">Filter</button>
</form>
<p id="pipeline-list-count" class="muted" aria-live="polite">${count}</p>
${list}
${pagerLinks(view.url, view.page, view.page * PIPELINES_PER_PAGE < view.total)}`;
}
