import { Code, ConnectError } from "@connectrpc/connect";
import { type TSchema, Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../http-error.js";
import { linkHeader } from "../paging.js";
import {
  pipelineLevelOf,
  renderTeamMember,
  renderTeamPipeline,
  renderTeamSuite,
  suiteLevelsOf,
  TeamMemberSchema,
  TeamPipelineSchema,
  TeamSuiteSchema,
  teamRoleOf,
} from "../render/team.js";
import { noContent, responses, typed } from "./declare.js";
import { type RouteDeps, rpcOptions } from "./deps.js";
import { BOUNDS, Id, PagingQuery, type PagingQueryValues, pageOf, Slug, text } from "./params.js";

const TeamParams = Type.Object({ org: Slug, team: Id });
const MemberParams = Type.Object({ org: Slug, team: Id, user: Id });
const TeamPipelineParams = Type.Object({ org: Slug, team: Id, pipeline: Id });
const SuiteParams = Type.Object({ org: Slug, team: Id, suite: Id });

const TEAM = "/v2/organizations/:org/teams/:team";

/**
 * The association bodies (spec: Team members, pipelines, suites). Presence and values (roles, levels) are identity's
 * to judge, so every problem is reported at once in its `{"message":"Validation failed: <reason>"}`; the schemas
 * bound the types and sizes (`bodyErrors: "sentence"` words their failures the same way).
 */
/** The JSON types other than a string, each its own branch (no union types: Ajv's strict mode refuses them). */
const NOT_STRING = ["number", "boolean", "null", "object", "array"].map((type) => ({ type }));

/**
 * A body value identity judges: a string is bounded like any other, and a value of another type passes the schema
 * so that it is reported in the spec's words ("User can't be blank") rather than the validator's.
 */
const judged = (max: number, description?: string) =>
  Type.Optional(
    Type.Unsafe<unknown>({
      anyOf: [{ type: "string", maxLength: max }, ...NOT_STRING],
      ...(description ? { description } : {}),
    }),
  );
const role = judged(BOUNDS.name, "member or maintainer");
const pipelineLevel = judged(BOUNDS.name, "read_only, build_and_read or manage_build_and_read");
const suiteLevels = Type.Optional(
  Type.Unsafe<unknown>({
    anyOf: [
      { type: "string", maxLength: BOUNDS.name },
      { type: "array", maxItems: 10, items: { anyOf: [{ type: "string", maxLength: BOUNDS.name }, ...NOT_STRING] } },
      ...NOT_STRING.filter((t) => t.type !== "array"),
    ],
    description: "an array of read and edit",
  }),
);
const AddMemberBody = Type.Object({ user_id: judged(BOUNDS.id), role });
const UpdateMemberBody = Type.Object({ role });
const AddPipelineBody = Type.Object({ pipeline_id: judged(BOUNDS.slug), access_level: pipelineLevel });
const UpdatePipelineBody = Type.Object({ access_level: pipelineLevel });
const RemovePipelineBody = Type.Object({ pipeline_id: judged(BOUNDS.id) });
const AddSuiteBody = Type.Object({ suite_id: judged(BOUNDS.id), access_level: suiteLevels });
const UpdateSuiteBody = Type.Object({ access_level: suiteLevels });

const tags = ["teams"];

/** The declaration of a team route: its scope, schemas and the team routes' way of answering a bad body. */
function declaration<S extends object>(scope: "view_teams" | "write_teams", schema: S) {
  return {
    config: { scope, bodyErrors: "sentence" as const },
    schema: { tags, ...schema },
  };
}

const list = (operationId: string, summary: string, item: TSchema) =>
  declaration("view_teams", {
    operationId,
    summary,
    params: TeamParams,
    querystring: PagingQuery,
    response: responses(200, Type.Array(item)),
  });

/** A string property of a JSON body, trimmed; absent is "", which identity reports as missing. */
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
  const teamOf = (request: FastifyRequest & { params: { org: string; team: string } }) => ({
    organizationId: organizationAccess(request, request.params.org).organization?.id ?? "",
    actorId: request.principal?.user?.id ?? "",
    teamId: request.params.team,
  });

  /** Lists one page through `fetch` and sets the Link header from its total. */
  const paged = async <T>(
    request: FastifyRequest & { query: PagingQueryValues },
    reply: { header(name: string, value: string): unknown },
    fetch: (page: number, perPage: number) => Promise<{ items: T[]; totalCount: number }>,
  ) => {
    const paging = pageOf(request.query);
    const { items, totalCount } = await fetch(paging.page, paging.perPage);
    const link = linkHeader(deps.publicUrl, request.url, paging, { total: totalCount });
    if (link) reply.header("link", link);
    return items;
  };

  // Team members.

  const route = typed(app);

  route.get(
    `${TEAM}/members`,
    list("listTeamMembers", "List a team's members", TeamMemberSchema),
    async (request, reply) => {
      const items = await paged(request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamMembers({ ...teamOf(request), page, perPage }, rpcOptions(request));
        return { items: res.members, totalCount: res.totalCount };
      });
      return items.map(renderTeamMember);
    },
  );

  route.get(
    `${TEAM}/members/:user`,
    declaration("view_teams", {
      operationId: "getTeamMember",
      summary: "Get a team member",
      params: MemberParams,
      response: responses(200, TeamMemberSchema),
    }),
    async (request) => {
      const res = await clients.teams.getTeamMember(
        { ...teamOf(request), userId: request.params.user },
        rpcOptions(request),
      );
      if (!res.member) throw new HttpError(404, "No team member found");
      return renderTeamMember(res.member);
    },
  );

  for (const [path, operationId] of [
    [`${TEAM}/members`, "addTeamMember"],
    [`${TEAM}/members/`, "addTeamMemberSlash"],
  ] as const) {
    route.post(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Add a user to a team as member or maintainer",
        params: TeamParams,
        body: AddMemberBody,
        response: responses(201, TeamMemberSchema),
      }),
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

  route.patch(
    `${TEAM}/members/:user`,
    declaration("write_teams", {
      operationId: "updateTeamMember",
      summary: "Change a team member's role",
      params: MemberParams,
      body: UpdateMemberBody,
      response: responses(200, TeamMemberSchema),
    }),
    async (request) => {
      const res = await clients.teams.updateTeamMember(
        { ...teamOf(request), userId: request.params.user, role: teamRoleOf(bodyValue(request.body, "role")) },
        rpcOptions(request),
      );
      if (!res.member) throw new HttpError(404, "No team member found");
      return renderTeamMember(res.member);
    },
  );

  route.delete(
    `${TEAM}/members/:user`,
    declaration("write_teams", {
      operationId: "removeTeamMember",
      summary: "Remove a user from a team",
      params: MemberParams,
      response: noContent,
    }),
    async (request, reply) => {
      await clients.teams.removeTeamMember({ ...teamOf(request), userId: request.params.user }, rpcOptions(request));
      return reply.status(204).send();
    },
  );

  // Team pipelines.

  route.get(
    `${TEAM}/pipelines`,
    list("listTeamPipelines", "List the pipelines a team has access to", TeamPipelineSchema),
    async (request, reply) => {
      const items = await paged(request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamPipelines({ ...teamOf(request), page, perPage }, rpcOptions(request));
        return { items: res.pipelines, totalCount: res.totalCount };
      });
      return items.map((l) => renderTeamPipeline(l, urls, request.params.org));
    },
  );

  route.get(
    `${TEAM}/pipelines/:pipeline`,
    declaration("view_teams", {
      operationId: "getTeamPipeline",
      summary: "Get a team's access to a pipeline",
      params: TeamPipelineParams,
      response: responses(200, TeamPipelineSchema),
    }),
    async (request) => {
      const res = await clients.teams.getTeamPipeline(
        { ...teamOf(request), pipelineId: request.params.pipeline },
        rpcOptions(request),
      );
      if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
      return renderTeamPipeline(res.pipeline, urls, request.params.org);
    },
  );

  for (const [path, operationId] of [
    [`${TEAM}/pipelines`, "addTeamPipeline"],
    [`${TEAM}/pipelines/`, "addTeamPipelineSlash"],
  ] as const) {
    route.post(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Give a team access to a pipeline",
        params: TeamParams,
        body: AddPipelineBody,
        response: responses(201, TeamPipelineSchema),
      }),
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

  route.patch(
    `${TEAM}/pipelines/:pipeline`,
    declaration("write_teams", {
      operationId: "updateTeamPipeline",
      summary: "Change a team's access level to a pipeline",
      params: TeamPipelineParams,
      body: UpdatePipelineBody,
      response: responses(200, TeamPipelineSchema),
    }),
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

  route.delete(
    `${TEAM}/pipelines/:pipeline`,
    declaration("write_teams", {
      operationId: "removeTeamPipeline",
      summary: "Take a pipeline from a team",
      params: TeamPipelineParams,
      response: noContent,
    }),
    async (request, reply) => {
      await clients.teams.removeTeamPipeline(
        { ...teamOf(request), pipelineId: request.params.pipeline },
        rpcOptions(request),
      );
      return reply.status(204).send();
    },
  );

  // The published form names no pipeline in the path: it comes as pipeline_id in the JSON body or the query string.
  route.delete(
    `${TEAM}/pipelines/`,
    declaration("write_teams", {
      operationId: "removeTeamPipelineNamedInBody",
      summary: "Take a pipeline from a team, naming it as pipeline_id in the body or query string",
      params: TeamParams,
      querystring: Type.Object({ pipeline_id: Type.Optional(text(BOUNDS.id)) }),
      body: Type.Union([RemovePipelineBody, Type.Null()]),
      response: noContent,
    }),
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

  route.get(
    `${TEAM}/suites`,
    list("listTeamSuites", "List the test suites a team has access to", TeamSuiteSchema),
    async (request, reply) => {
      const items = await paged(request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamSuites({ ...teamOf(request), page, perPage }, rpcOptions(request));
        return { items: res.suites, totalCount: res.totalCount };
      });
      return items.map((l) => renderTeamSuite(l, urls, request.params.org));
    },
  );

  route.get(
    `${TEAM}/suites/:suite`,
    declaration("view_teams", {
      operationId: "getTeamSuite",
      summary: "Get a team's access to a test suite",
      params: SuiteParams,
      response: responses(200, TeamSuiteSchema),
    }),
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
  for (const [path, operationId] of [
    [`${TEAM}/suite`, "addTeamSuite"],
    [`${TEAM}/suite/`, "addTeamSuiteSlash"],
    [`${TEAM}/suites`, "addTeamSuitePlural"],
    [`${TEAM}/suites/`, "addTeamSuitePluralSlash"],
  ] as const) {
    route.post(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Give a team access to a test suite",
        params: TeamParams,
        body: AddSuiteBody,
        response: responses(201, TeamSuiteSchema),
      }),
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

  route.patch(
    `${TEAM}/suites/:suite`,
    declaration("write_teams", {
      operationId: "updateTeamSuite",
      summary: "Change a team's access levels to a test suite",
      params: SuiteParams,
      body: UpdateSuiteBody,
      response: responses(200, TeamSuiteSchema),
    }),
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

  for (const [path, operationId] of [
    [`${TEAM}/suites/:suite`, "removeTeamSuite"],
    [`${TEAM}/suites/:suite/`, "removeTeamSuiteSlash"],
  ] as const) {
    route.delete(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Take a test suite from a team",
        params: SuiteParams,
        response: noContent,
      }),
      async (request, reply) => {
        await clients.teams.removeTeamSuite({ ...teamOf(request), suiteId: request.params.suite }, rpcOptions(request));
        return reply.status(204).send();
      },
    );
  }
}
