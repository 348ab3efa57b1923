import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { callerOf, organizationAccess } from "../auth/authenticate.js";
import { isOrganizationAdmin } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import { AgentSchema, renderAgent } from "../render/agent.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, MAX_INT32, OrgParams, Slug, text } from "../route-declarations/params.js";
import { linkHeader, pageOf, pagingProperties } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const AgentParams = Type.Object({ org: Slug, agent: Id });
const filter = Type.Optional(text(BOUNDS.name));
const ListQuery = Type.Object({ ...pagingProperties, name: filter, hostname: filter, version: filter });
const StopBody = Type.Union([Type.Object({ force: Type.Optional(Type.Boolean()) }), Type.Null()]);
/** The pause request as go-buildkite sends it (`AgentPauseOptions`); the agents service checks the values. */
export const PauseBody = Type.Union([
  Type.Object({
    note: Type.Optional(text(1000)),
    timeout_in_minutes: Type.Optional(Type.Integer({ minimum: -MAX_INT32 - 1, maximum: MAX_INT32 })),
  }),
  Type.Null(),
]);
const tags = ["agents"];

/** The REST agent operations: list an organization's connected agents, get one, stop, pause or resume one. */
export function agentRestRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;

  const route = typed(app);

  route.get(
    "/v2/organizations/:org/agents",
    {
      config: { scope: "read_agents" },
      schema: {
        operationId: "listAgents",
        summary: "List an organization's connected agents",
        tags,
        params: OrgParams,
        querystring: ListQuery,
        response: responses(200, Type.Array(AgentSchema)),
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const paging = pageOf(request.query);
      const res = await clients.agents.listAgents({
        organizationId: access.organization?.id ?? "",
        page: paging.page,
        perPage: paging.perPage,
        name: request.query.name ?? "",
        hostname: request.query.hostname ?? "",
        version: request.query.version ?? "",
      });
      const link = linkHeader(deps.publicUrl, request.url, paging, { hasMore: res.hasMore });
      if (link) reply.header("link", link);
      return res.agents.map((agent) => renderAgent(agent, { urls, orgSlug: request.params.org }));
    },
  );

  route.get(
    "/v2/organizations/:org/agents/:agent",
    {
      config: { scope: "read_agents" },
      schema: {
        operationId: "getAgent",
        summary: "Get an agent",
        tags,
        params: AgentParams,
        response: responses(200, AgentSchema),
      },
    },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const res = await clients.agents.getAgent({
        organizationId: access.organization?.id ?? "",
        id: request.params.agent,
      });
      if (!res.agent) throw new HttpError(404, "No agent found");
      return renderAgent(res.agent, { urls, orgSlug: request.params.org });
    },
  );

  route.put(
    "/v2/organizations/:org/agents/:agent/stop",
    {
      config: { scope: "write_agents" },
      schema: {
        operationId: "stopAgent",
        summary: "Stop an agent (force cancels its job)",
        tags,
        params: AgentParams,
        body: StopBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      // Stopping machines that run everyone's builds is an administrator's call.
      if (!isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
      await clients.agents.stopAgent({
        organizationId: access.organization?.id ?? "",
        id: request.params.agent,
        force: request.body?.force ?? false,
      });
      return reply.status(204).send();
    },
  );

  route.put(
    "/v2/organizations/:org/agents/:agent/pause",
    {
      config: { scope: "write_agents" },
      schema: {
        operationId: "pauseAgent",
        summary: "Pause an agent: it takes no jobs until resumed or its pause times out",
        tags,
        params: AgentParams,
        body: PauseBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      // Like stopping, taking a machine out of everyone's builds is an administrator's call.
      if (!isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
      await clients.agents.pauseAgent({
        organizationId: access.organization?.id ?? "",
        id: request.params.agent,
        note: request.body?.note ?? "",
        timeoutInMinutes: request.body?.timeout_in_minutes,
        pausedBy: callerOf(request),
      });
      return reply.status(204).send();
    },
  );

  route.put(
    "/v2/organizations/:org/agents/:agent/resume",
    {
      config: { scope: "write_agents" },
      schema: {
        operationId: "resumeAgent",
        summary: "Resume a paused agent",
        tags,
        params: AgentParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      if (!isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
      await clients.agents.resumeAgent({ organizationId: access.organization?.id ?? "", id: request.params.agent });
      return reply.status(204).send();
    },
  );
}
