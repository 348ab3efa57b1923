import type { Agent } from "@conveyor/proto/agents";
import type { Organization } from "@conveyor/proto/identity";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../../auth/authenticate.js";
import { typed } from "../../route-declarations/declare.js";
import { BOUNDS, MAX_INT32, OrgParams, text } from "../../route-declarations/params.js";
import { stateBadge, timeTag } from "../format.js";
import { type HtmlValue, html, type SafeHtml } from "../html.js";
import { renderPage } from "../layout.js";
import { agentPath, agentsPath, orgPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { currentJobPath } from "./current-job-redirect.js";
import { pagerLinks } from "./pager.js";

/** Agents per page of the agents page. */
export const AGENTS_PER_PAGE = 50;

const Query = Type.Object({
  name: Type.Optional(text(BOUNDS.name)),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32 })),
});

/** An agent's state as a badge: paused and stopping say so over its connection state. */
export function agentState(agent: Agent): SafeHtml {
  if (agent.connectionState === "connected" && agent.paused) return stateBadge("paused");
  if (agent.connectionState === "connected" && agent.stopRequested) return stateBadge("stopping");
  return stateBadge(agent.connectionState);
}

/** An agent's tags (its "key=value" meta-data) as tags. */
export function agentTags(agent: Agent): HtmlValue {
  return agent.metaData.map((t) => html`<span class="tag">${t}</span>`);
}

/** Its current job: a link that finds the job's build (current-job-redirect.ts), or "idle". */
export function agentJob(org: string, agent: Agent): HtmlValue {
  if (agent.currentJobId === "") return html`<span class="muted">idle</span>`;
  return html`<a href="${currentJobPath(org, agent.currentJobId)}">Current job</a>`;
}

/**
 * GET /organizations/{org}/agents: the organization's connected agents, as the REST API lists them to its members
 * (state, name, hostname, tags, version, current job, when it connected), filtered by name, paged.
 */
export function agentsPage(scope: FastifyInstance, deps: WebDeps): void {
  typed(scope).get(
    "/organizations/:org/agents",
    { preHandler: deps.requireSignIn, schema: { params: OrgParams, querystring: Query } },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const organization = access.organization as Organization;
      const page = request.query.page ?? 1;
      const name = (request.query.name ?? "").trim();
      const res = await deps.clients.agents.listAgents({
        organizationId: organization.id,
        page,
        perPage: AGENTS_PER_PAGE,
        name,
      });
      const body = renderAgents(organization, res.agents, { name, page, hasMore: res.hasMore, url: request.url });
      return reply
        .type("text/html; charset=utf-8")
        .send(
          renderPage(request, { title: `Agents · ${organization.name}`, org: organization, section: "agents", body }),
        );
    },
  );
}

/** The agents page's content. */
export function renderAgents(
  organization: Pick<Organization, "slug" | "name">,
  agents: readonly Agent[],
  view: { name: string; page: number; hasMore: boolean; url: string },
): SafeHtml {
  const org = organization.slug;
  const rows = agents.map(
    (a) => html`<tr>
      <td>${agentState(a)}</td>
      <td><a href="${agentPath(org, a.id)}">${a.name}</a></td>
      <td>${a.hostname}</td>
      <td>${agentTags(a)}</td>
      <td>${a.version}</td>
      <td>${agentJob(org, a)}</td>
      <td>${a.connectionState === "lost" ? timeTag(a.lostAt) : timeTag(a.connectedAt)}</td>
    </tr>`,
  );
  const table =
    agents.length === 0
      ? html`<p class="empty panel">${view.name ? html`No agents match “${view.name}”.` : "No agents are connected."}</p>`
      : html`<div class="panel"><table>
  <caption class="visually-hidden">Agents of ${organization.name}</caption>
  <thead><tr><th scope="col">State</th><th scope="col">Name</th><th scope="col">Hostname</th><th scope="col">Tags</th><th scope="col">Version</th><th scope="col">Job</th><th scope="col">Since</th></tr></thead>
  <tbody>${rows}</tbody>
</table></div>`;
  return html`<nav aria-label="Breadcrumbs"><ol class="breadcrumbs">
  <li><a href="${orgPath(org)}">${organization.name}</a></li>
  <li><a href="${agentsPath(org)}" aria-current="page">Agents</a></li>
</ol></nav>
<h1>Agents</h1>
<form class="filter-form" method="get" action="${agentsPath(org)}" role="search">
  <div class="field">
    <label for="agent-filter">Filter agents by name or hostname</label>
    <input type="search" id="agent-filter" name="name" value="${view.name}" autocomplete="off">
  </div>
  <button type="submit">Filter</button>
</form>
${table}
${pagerLinks(view.url, view.page, view.hasMore)}`;
}
