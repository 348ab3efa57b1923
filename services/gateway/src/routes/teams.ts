import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../http-error.js";
import { linkHeader, pagingQuerySchema, parsePaging } from "../paging.js";
import { arrayOf, errorSchema } from "../render/schemas.js";
import {
  pipelineLevelOf,
  renderTeamMember,
  renderTeamPipeline,
  renderTeamSuite,
  suiteLevelsOf,
  teamMemberSchema,
  teamPipelineSchema,
  teamRoleOf,
  teamSuiteSchema,
} from "../render/team.js";
import { type RouteDeps, rpcOptions } from "./deps.js";

type TeamParams = { org: string; team: string };
type PagingQuery = { page?: string; per_page?: string };

const TEAM = "/v2/organizations/:org/teams/:team";

const response = (ok: object, okStatus = 200) => ({ [okStatus]: ok, "4xx": errorSchema });
const listSchema = (item: object) => ({
  querystring: { type: "object", properties: pagingQuerySchema },
  response: response(arrayOf(item)),
});

/**
 * A string property of a JSON body. Bodies are not checked by a schema here: these routes answer every invalid
 * input with identity's `{"message":"Validation failed: <reason>"}`, so a value of the wrong type is passed on as
 * missing and reported with the other problems.
 */
function bodyString(body: unknown, key: string): string {
  const value = typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined;
  return typeof value === "string" ? value.trim() : "";
}

function bodyValue(body: unknown, key: string): unknown {
  return typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined;
}

/**
 * The team association routes: team members, team pipelines and team suites, each with both path spellings that
 * clients use (the spec's trailing slashes and go-buildkite's forms). Identity decides who may see and change a team.
 */
export function teamRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;

  /** The team a request names and who is asking; the organization must be reachable (else 404). */
  const teamOf = (request: FastifyRequest<{ Params: TeamParams }>) => ({
    organizationId: organizationAccess(request, request.params.org).organization?.id ?? "",
    actorId: request.principal?.user?.id ?? "",
    teamId: request.params.team,
  });

  /** Lists one page through `fetch` and sets the Link header from its total. */
  const paged = async <T>(
    request: FastifyRequest<{ Querystring: PagingQuery }>,
    reply: { header(name: string, value: string): unknown },
    fetch: (page: number, perPage: number) => Promise<{ items: T[]; totalCount: number }>,
  ) => {
    const paging = parsePaging(request.query);
    const { items, totalCount } = await fetch(paging.page, paging.perPage);
    const link = linkHeader(deps.publicUrl, request.url, paging, { total: totalCount });
    if (link) reply.header("link", link);
    return items;
  };

  // Team members.

  app.get<{ Params: TeamParams; Querystring: PagingQuery }>(
    `${TEAM}/members`,
    { schema: listSchema(teamMemberSchema) },
    async (request, reply) => {
      const items = await paged(request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamMembers({ ...teamOf(request), page, perPage }, rpcOptions(request));
        return { items: res.members, totalCount: res.totalCount };
      });
      return items.map(renderTeamMember);
    },
  );

  app.get<{ Params: TeamParams & { user: string } }>(
    `${TEAM}/members/:user`,
    { schema: { response: response(teamMemberSchema) } },
    async (request) => {
      const res = await clients.teams.getTeamMember(
        { ...teamOf(request), userId: request.params.user },
        rpcOptions(request),
      );
      if (!res.member) throw new HttpError(404, "No team member found");
      return renderTeamMember(res.member);
    },
  );

  for (const path of [`${TEAM}/members`, `${TEAM}/members/`]) {
    app.post<{ Params: TeamParams; Body: unknown }>(
      path,
      { schema: { response: response(teamMemberSchema, 201) } },
      async (request, reply) => {
        const res = await clients.teams.addTeamMember(
          {
            ...teamOf(request),
            userId: bodyString(request.body, "user_id"),
            role: teamRoleOf(bodyValue(request.body, "role")),
          },
          rpcOptions(request),
        );
        if (!res.member) throw new HttpError(404, "No team member found");
        return reply.status(201).send(renderTeamMember(res.member));
      },
    );
  }

  app.patch<{ Params: TeamParams & { user: string }; Body: unknown }>(
    `${TEAM}/members/:user`,
    { schema: { response: response(teamMemberSchema) } },
    async (request) => {
      const res = await clients.teams.updateTeamMember(
        { ...teamOf(request), userId: request.params.user, role: teamRoleOf(bodyValue(request.body, "role")) },
        rpcOptions(request),
      );
      if (!res.member) throw new HttpError(404, "No team member found");
      return renderTeamMember(res.member);
    },
  );

  app.delete<{ Params: TeamParams & { user: string } }>(
    `${TEAM}/members/:user`,
    { schema: { response: { "4xx": errorSchema } } },
    async (request, reply) => {
      await clients.teams.removeTeamMember({ ...teamOf(request), userId: request.params.user }, rpcOptions(request));
      return reply.status(204).send();
    },
  );

  // Team pipelines.

  app.get<{ Params: TeamParams; Querystring: PagingQuery }>(
    `${TEAM}/pipelines`,
    { schema: listSchema(teamPipelineSchema) },
    async (request, reply) => {
      const items = await paged(request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamPipelines({ ...teamOf(request), page, perPage }, rpcOptions(request));
        return { items: res.pipelines, totalCount: res.totalCount };
      });
      return items.map((l) => renderTeamPipeline(l, urls, request.params.org));
    },
  );

  app.get<{ Params: TeamParams & { pipeline: string } }>(
    `${TEAM}/pipelines/:pipeline`,
    { schema: { response: response(teamPipelineSchema) } },
    async (request) => {
      const res = await clients.teams.getTeamPipeline(
        { ...teamOf(request), pipelineId: request.params.pipeline },
        rpcOptions(request),
      );
      if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
      return renderTeamPipeline(res.pipeline, urls, request.params.org);
    },
  );

  for (const path of [`${TEAM}/pipelines`, `${TEAM}/pipelines/`]) {
    app.post<{ Params: TeamParams; Body: unknown }>(
      path,
      { schema: { response: response(teamPipelineSchema, 201) } },
      async (request, reply) => {
        const team = teamOf(request);
        // Pipelines belong to the pipelines service: only one of this organization may be added. One that is not
        // found goes on as "" for identity to report with the request's other problems, once the team is found.
        const ref = bodyString(request.body, "pipeline_id");
        let pipelineId = "";
        if (ref !== "") {
          try {
            const found = await clients.pipelines.getPipeline(
              { organizationId: team.organizationId, pipeline: ref },
              rpcOptions(request),
            );
            pipelineId = found.pipeline?.id ?? "";
          } catch (err) {
            if (ConnectError.from(err).code !== Code.NotFound) throw err;
          }
        }
        const res = await clients.teams.addTeamPipeline(
          { ...team, pipelineId, accessLevel: pipelineLevelOf(bodyValue(request.body, "access_level")) },
          rpcOptions(request),
        );
        if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
        return reply.status(201).send(renderTeamPipeline(res.pipeline, urls, request.params.org));
      },
    );
  }

  app.patch<{ Params: TeamParams & { pipeline: string }; Body: unknown }>(
    `${TEAM}/pipelines/:pipeline`,
    { schema: { response: response(teamPipelineSchema) } },
    async (request) => {
      const res = await clients.teams.updateTeamPipeline(
        {
          ...teamOf(request),
          pipelineId: request.params.pipeline,
          accessLevel: pipelineLevelOf(bodyValue(request.body, "access_level")),
        },
        rpcOptions(request),
      );
      if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
      return renderTeamPipeline(res.pipeline, urls, request.params.org);
    },
  );

  app.delete<{ Params: TeamParams & { pipeline: string } }>(
    `${TEAM}/pipelines/:pipeline`,
    { schema: { response: { "4xx": errorSchema } } },
    async (request, reply) => {
      await clients.teams.removeTeamPipeline(
        { ...teamOf(request), pipelineId: request.params.pipeline },
        rpcOptions(request),
      );
      return reply.status(204).send();
    },
  );

  // The published form names no pipeline in the path: it comes as pipeline_id in the JSON body or the query string.
  app.delete<{ Params: TeamParams; Querystring: { pipeline_id?: string }; Body: unknown }>(
    `${TEAM}/pipelines/`,
    {
      schema: {
        querystring: { type: "object", properties: { pipeline_id: { type: "string" } } },
        response: { "4xx": errorSchema },
      },
    },
    async (request, reply) => {
      const pipelineId = bodyString(request.body, "pipeline_id") || (request.query.pipeline_id ?? "").trim();
      if (pipelineId === "") {
        throw new HttpError(
          422,
          "Team pipeline could not be deleted: name the pipeline by its UUID as pipeline_id, in the body or the query string",
        );
      }
      await clients.teams.removeTeamPipeline({ ...teamOf(request), pipelineId }, rpcOptions(request));
      return reply.status(204).send();
    },
  );

  // Team suites.

  app.get<{ Params: TeamParams; Querystring: PagingQuery }>(
    `${TEAM}/suites`,
    { schema: listSchema(teamSuiteSchema) },
    async (request, reply) => {
      const items = await paged(request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamSuites({ ...teamOf(request), page, perPage }, rpcOptions(request));
        return { items: res.suites, totalCount: res.totalCount };
      });
      return items.map((l) => renderTeamSuite(l, urls, request.params.org));
    },
  );

  app.get<{ Params: TeamParams & { suite: string } }>(
    `${TEAM}/suites/:suite`,
    { schema: { response: response(teamSuiteSchema) } },
    async (request) => {
      const res = await clients.teams.getTeamSuite(
        { ...teamOf(request), suiteId: request.params.suite },
        rpcOptions(request),
      );
      if (!res.suite) throw new HttpError(404, "No team suite found");
      return renderTeamSuite(res.suite, urls, request.params.org);
    },
  );

  // Published as the singular `suite/`; go-buildkite posts to `suite`, the current docs to `suites/`.
  for (const path of [`${TEAM}/suite`, `${TEAM}/suite/`, `${TEAM}/suites`, `${TEAM}/suites/`]) {
    app.post<{ Params: TeamParams; Body: unknown }>(
      path,
      { schema: { response: response(teamSuiteSchema, 201) } },
      async (request, reply) => {
        const res = await clients.teams.addTeamSuite(
          {
            ...teamOf(request),
            suiteId: bodyString(request.body, "suite_id"),
            accessLevels: suiteLevelsOf(bodyValue(request.body, "access_level")),
          },
          rpcOptions(request),
        );
        if (!res.suite) throw new HttpError(404, "No team suite found");
        return reply.status(201).send(renderTeamSuite(res.suite, urls, request.params.org));
      },
    );
  }

  app.patch<{ Params: TeamParams & { suite: string }; Body: unknown }>(
    `${TEAM}/suites/:suite`,
    { schema: { response: response(teamSuiteSchema) } },
    async (request) => {
      const res = await clients.teams.updateTeamSuite(
        {
          ...teamOf(request),
          suiteId: request.params.suite,
          accessLevels: suiteLevelsOf(bodyValue(request.body, "access_level")),
        },
        rpcOptions(request),
      );
      if (!res.suite) throw new HttpError(404, "No team suite found");
      return renderTeamSuite(res.suite, urls, request.params.org);
    },
  );

  for (const path of [`${TEAM}/suites/:suite`, `${TEAM}/suites/:suite/`]) {
    app.delete<{ Params: TeamParams & { suite: string } }>(
      path,
      { schema: { response: { "4xx": errorSchema } } },
      async (request, reply) => {
        await clients.teams.removeTeamSuite({ ...teamOf(request), suiteId: request.params.suite }, rpcOptions(request));
        return reply.status(204).send();
      },
    );
  }
}
