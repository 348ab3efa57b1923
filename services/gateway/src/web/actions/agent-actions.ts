import { ConnectError } from "@connectrpc/connect";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { callerOf, organizationAccess } from "../../auth/authenticate.js";
import { isOrganizationAdmin } from "../../auth/pipeline-access.js";
import { toErrorReply } from "../../errors/error-handler.js";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { text } from "../../route-declarations/params.js";
import { AgentParams, createAgentPage } from "../pages/agent-page.js";
import { agentPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";

const PauseBody = Type.Object({
  note: Type.Optional(text(1000)),
  // Digits as the form sends them (empty: the service's default); the agents service judges the range.
  timeout_in_minutes: Type.Optional(Type.String({ pattern: "^[0-9]{0,9}$" })),
});
const StopBody = Type.Object({ force: Type.Optional(Type.String({ maxLength: 5 })) });

/**
 * POST /organizations/{org}/agents/{id}/pause, /resume and /stop: the agent page's buttons, with the REST API's
 * rule (only an organization's administrators control its agents: 403 otherwise) and the agents service's state
 * rules. Done, the action answers 303 to the agent page as it now is; refused by the service (422, e.g. pausing a
 * paused agent), it answers the agent page with what was wrong.
 */
export function agentActions(scope: FastifyInstance, deps: WebDeps): void {
  const serveAgentPage = createAgentPage(deps);
  const route = typed(scope);
  const hooks = [deps.requireSignIn, deps.requireCsrf];

  /** Runs an action on the agent as an administrator, and answers with the agent page. */
  const act = async (
    request: FastifyRequest,
    reply: FastifyReply,
    params: { org: string; agent: string },
    run: (organizationId: string) => Promise<unknown>,
  ) => {
    const access = organizationAccess(request, params.org);
    if (!isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
    try {
      await run(access.organization?.id ?? "");
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      const { status, body } = toErrorReply(err);
      if (status !== 422) throw err;
      return serveAgentPage(request, reply, params, { status, error: String(body.message) });
    }
    return reply.redirect(agentPath(params.org, params.agent), 303);
  };

  route.post(
    "/organizations/:org/agents/:agent/pause",
    { preHandler: hooks, schema: { params: AgentParams, body: PauseBody } },
    async (request, reply) => {
      const minutes = request.body.timeout_in_minutes;
      return act(request, reply, request.params, (organizationId) =>
        deps.clients.agents.pauseAgent({
          organizationId,
          id: request.params.agent,
          note: request.body.note ?? "",
          timeoutInMinutes: minutes ? Number(minutes) : undefined,
          pausedBy: callerOf(request),
        }),
      );
    },
  );

  route.post(
    "/organizations/:org/agents/:agent/resume",
    { preHandler: hooks, schema: { params: AgentParams } },
    async (request, reply) =>
      act(request, reply, request.params, (organizationId) =>
        deps.clients.agents.resumeAgent({ organizationId, id: request.params.agent }),
      ),
  );

  route.post(
    "/organizations/:org/agents/:agent/stop",
    { preHandler: hooks, schema: { params: AgentParams, body: StopBody } },
    async (request, reply) =>
      act(request, reply, request.params, (organizationId) =>
        deps.clients.agents.stopAgent({
          organizationId,
          id: request.params.agent,
          force: request.body.force === "true",
        }),
      ),
  );
}
