import type { Agent } from "@conveyor/proto/agents";
import type { Organization } from "@conveyor/proto/identity";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { organizationAccess } from "../../auth/authenticate.js";
import { isOrganizationAdmin } from "../../auth/pipeline-access.js";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { Id, Slug } from "../../route-declarations/params.js";
import { personName, timeTag } from "../format.js";
import { type HtmlValue, html, type SafeHtml } from "../html.js";
import { renderPage } from "../layout.js";
import { agentPath, agentsPath, orgPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { agentJob, agentState, agentTags } from "./agents-page.js";

/** An agent of an organization, as its page and actions name it. */
export const AgentParams = Type.Object({ org: Slug, agent: Id });

/** What the agent page shows. */
export interface AgentView {
  organization: Pick<Organization, "slug" | "name">;
  agent: Agent;
  /** Whether the person may pause, resume and stop it (an administrator, as the REST API's agent routes). */
  canControl: boolean;
  csrf: SafeHtml;
  /** What a refused action said. */
  error?: string;
}

/**
 * Serves the agent page: GET here, and the agent actions' answer to a refused action (actions/agent-actions.ts).
 * Any member of the organization may see its agents, as with the REST API's read_agents; an agent of another
 * organization is 404.
 */
export function createAgentPage(deps: WebDeps) {
  return async function serveAgentPage(
    request: FastifyRequest,
    reply: FastifyReply,
    params: { org: string; agent: string },
    refused?: { status: number; error: string },
  ) {
    const access = organizationAccess(request, params.org);
    const organization = access.organization as Organization;
    const res = await deps.clients.agents.getAgent({ organizationId: organization.id, id: params.agent });
    if (!res.agent) throw new HttpError(404, "No agent found");
    const body = renderAgent({
      organization,
      agent: res.agent,
      canControl: isOrganizationAdmin(access),
      csrf: deps.csrfField(request),
      error: refused?.error,
    });
    return reply
      .status(refused?.status ?? 200)
      .type("text/html; charset=utf-8")
      .send(renderPage(request, { title: res.agent.name, org: organization, section: "agents", body }));
  };
}

/** GET /organizations/{org}/agents/{id}: one agent, with pause, resume and stop for administrators. */
export function agentPage(scope: FastifyInstance, deps: WebDeps): void {
  const serve = createAgentPage(deps);
  typed(scope).get(
    "/organizations/:org/agents/:agent",
    { preHandler: deps.requireSignIn, schema: { params: AgentParams } },
    async (request, reply) => serve(request, reply, request.params),
  );
}

/** The buttons an administrator has for the agent in its state. */
function controls(org: string, agent: Agent, csrf: SafeHtml): HtmlValue {
  const base = agentPath(org, agent.id);
  const connected = agent.connectionState === "connected";
  if (!connected) return html`<p class="muted">The agent is not connected: there is nothing to pause or stop.</p>`;
  const pause = agent.paused
    ? html`<form method="post" action="${base}/resume">${csrf}<button type="submit">Resume</button></form>`
    : html`<form method="post" action="${base}/pause" class="stacked">
        ${csrf}
        <div class="field">
          <label for="pause-note">Note <small>why it is paused (optional)</small></label>
          <input type="text" id="pause-note" name="note" maxlength="1000">
        </div>
        <div class="field">
          <label for="pause-timeout">Resume after (minutes) <small>1 to 10080; 5 when empty</small></label>
          <input type="text" id="pause-timeout" name="timeout_in_minutes" inputmode="numeric" pattern="[0-9]*">
        </div>
        <div class="actions"><button type="submit">Pause</button></div>
      </form>`;
  const stop = agent.stopRequested
    ? html`<p class="muted">Stopping: it disconnects when its current job is done.</p>`
    : html`<form method="post" action="${base}/stop" data-confirm="Stop ${agent.name}?">
        ${csrf}
        <label class="checkbox"><input type="checkbox" name="force" value="true"> Cancel its running job</label>
        <div class="actions"><button type="submit" class="danger">Stop agent</button></div>
      </form>`;
  return html`<div class="actions">${pause}${stop}</div>`;
}

/** The agent page's content. */
export function renderAgent(view: AgentView): SafeHtml {
  const org = view.organization.slug;
  const a = view.agent;
  const pausedBy = personName(a.pausedBy);
  return html`<nav aria-label="Breadcrumbs"><ol class="breadcrumbs">
  <li><a href="${orgPath(org)}">${view.organization.name}</a></li>
  <li><a href="${agentsPath(org)}">Agents</a></li>
  <li><a href="${agentPath(org, a.id)}" aria-current="page">${a.name}</a></li>
</ol></nav>
<div class="page-head"><h1>${a.name}</h1> ${agentState(a)}</div>
${view.error ? html`<div class="form-errors" role="alert">${view.error}</div>` : null}
<section class="panel" aria-labelledby="agent-facts">
  <h2 id="agent-facts">Details</h2>
  <div class="panel-body"><dl class="facts">
    <dt>Connection</dt><dd>${a.connectionState}</dd>
    <dt>Hostname</dt><dd>${a.hostname}</dd>
    <dt>IP address</dt><dd>${a.ipAddress}</dd>
    <dt>Version</dt><dd>${a.version}</dd>
    <dt>OS</dt><dd>${a.os} ${a.arch}</dd>
    <dt>Queue</dt><dd><code>${a.queue}</code></dd>
    <dt>Tags</dt><dd>${agentTags(a)}</dd>
    ${a.priority !== undefined ? html`<dt>Priority</dt><dd>${a.priority}</dd>` : null}
    <dt>Job</dt><dd>${agentJob(org, a)}</dd>
    <dt>Connected</dt><dd>${timeTag(a.connectedAt)}</dd>
    <dt>Last seen</dt><dd>${timeTag(a.lastSeenAt)}</dd>
    ${a.lostAt ? html`<dt>Lost</dt><dd>${timeTag(a.lostAt)}</dd>` : null}
    ${
      a.paused
        ? html`<dt>Paused</dt><dd>${timeTag(a.pausedAt)}${pausedBy ? html` by ${pausedBy}` : null}${
            a.pausedNote ? html`: ${a.pausedNote}` : null
          }${a.pausedTimeoutInMinutes ? html` (resumes after ${a.pausedTimeoutInMinutes} minutes)` : null}</dd>`
        : null
    }
  </dl></div>
</section>
${
  view.canControl
    ? html`<section class="panel" aria-labelledby="agent-controls">
  <h2 id="agent-controls">Control</h2>
  <div class="panel-body">${controls(org, a, view.csrf)}</div>
</section>`
    : null
}`;
}
