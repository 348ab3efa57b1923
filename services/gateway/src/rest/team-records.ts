/**
 * The teams themselves (docs/compatibility.md#teams; go-buildkite's `Teams.List` with `user_id`, `GetTeam`,
 * `CreateTeam`, `UpdateTeam` and `DeleteTeam`): identity decides who may see, create, change and delete a team.
 * Every body field is honoured or refused with a 422 naming it: Conveyor has no default teams, and its members never
 * create suites or registries nor destroy registries or packages, so those settings may only be false.
 */
import { TeamPrivacy } from "@conveyor/proto/identity";
import { TEAM_PRIVACIES } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { renderTeam, TeamSchema, UNSUPPORTED_TEAM_SETTINGS } from "../render/team.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, OrgParams, text } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import { PagingQuery } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";
import { paged, TEAM, TeamParams, teamOf } from "./teams-shared.js";

const TEAMS = "/v2/organizations/:org/teams";
const tags = ["teams"];

const fields = {
  name: text(BOUNDS.name),
  description: Type.Optional(text(1000)),
  privacy: Type.Optional(Type.String({ enum: [...TEAM_PRIVACIES.names] })),
  members_can_create_pipelines: Type.Optional(Type.Boolean()),
  is_default_team: Type.Optional(Type.Boolean({ description: "false only: Conveyor has no default teams" })),
  default_member_role: Type.Optional(Type.Null({ description: "not taken: Conveyor has no default teams" })),
  ...Object.fromEntries(
    UNSUPPORTED_TEAM_SETTINGS.map((k) => [k, Type.Optional(Type.Boolean({ description: "false only" }))]),
  ),
};
const KNOWN_FIELDS = Object.keys(fields);
const CreateBody = Type.Object(fields);
const UpdateBody = Type.Object({ ...fields, name: Type.Optional(text(BOUNDS.name)) });
type Body = { [k: string]: unknown; name?: string; description?: string; privacy?: string };

/** The settings that can only be false, refused with a 422 naming each when true. */
function refuseUnsupported(body: Body): void {
  const named = ["is_default_team", ...UNSUPPORTED_TEAM_SETTINGS].filter((k) => body[k] === true);
  if (named.length === 0) return;
  throw new HttpError(422, "Validation Failed", {
    message: "Validation Failed",
    errors: named.map((field) => ({ field, code: "is not supported (only false)" })),
  });
}

const privacyOf = (value: string | undefined) =>
  value === undefined ? TeamPrivacy.UNSPECIFIED : TEAM_PRIVACIES.valueOf(value);

/** The team routes themselves: list, create, get, update (PATCH) and delete. */
export function teamRecordRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients } = deps;
  const route = typed(app);

  route.get(
    TEAMS,
    {
      config: { scope: "view_teams" },
      schema: {
        operationId: "listTeams",
        summary: "List the teams of an organization the caller may see, by name; user_id: only that user's",
        tags,
        params: OrgParams,
        querystring: Type.Composite([PagingQuery, Type.Object({ user_id: Type.Optional(text(BOUNDS.id)) })]),
        response: responses(200, Type.Array(TeamSchema)),
      },
    },
    async (request, reply) => {
      const organizationId = organizationAccess(request, request.params.org).organization?.id ?? "";
      const actorId = request.principal?.user?.id ?? "";
      const items = await paged(deps, request, reply, async (page, perPage) => {
        const userId = request.query.user_id ?? "";
        const res = await clients.teams.listTeams({ organizationId, actorId, userId, page, perPage });
        return { items: res.teams, totalCount: res.totalCount };
      });
      return items.map(renderTeam);
    },
  );

  route.post(
    TEAMS,
    {
      config: { scope: "write_teams" },
      preValidation: onlyFields(KNOWN_FIELDS),
      schema: {
        operationId: "createTeam",
        summary: "Create a team (administrators)",
        tags,
        params: OrgParams,
        body: CreateBody,
        response: responses(201, TeamSchema),
      },
    },
    async (request, reply) => {
      const body = request.body as Body & typeof request.body;
      refuseUnsupported(body);
      const organization = organizationAccess(request, request.params.org).organization?.id ?? "";
      const res = await clients.teams.createTeam({
        organization,
        actorId: request.principal?.user?.id ?? "",
        name: body.name,
        description: body.description ?? "",
        privacy: privacyOf(body.privacy),
        ...(body.members_can_create_pipelines !== undefined
          ? { membersCanCreatePipelines: body.members_can_create_pipelines }
          : {}),
      });
      if (!res.team) throw new HttpError(500, "The team was not returned");
      return reply.status(201).send(renderTeam(res.team));
    },
  );

  route.get(
    TEAM,
    {
      config: { scope: "view_teams" },
      schema: {
        operationId: "getTeam",
        summary: "Get a team",
        tags,
        params: TeamParams,
        response: responses(200, TeamSchema),
      },
    },
    async (request) => {
      const res = await clients.teams.getTeam(teamOf(request));
      if (!res.team) throw new HttpError(404, "No team found");
      return renderTeam(res.team);
    },
  );

  route.patch(
    TEAM,
    {
      config: { scope: "write_teams" },
      preValidation: onlyFields(KNOWN_FIELDS),
      schema: {
        operationId: "updateTeam",
        summary: "Change a team (administrators and its maintainers); absent fields are kept",
        tags,
        params: TeamParams,
        body: UpdateBody,
        response: responses(200, TeamSchema),
      },
    },
    async (request) => {
      const body = request.body as Body & typeof request.body;
      refuseUnsupported(body);
      const res = await clients.teams.updateTeam({
        ...teamOf(request),
        // go-buildkite sends the whole team with empty strings left out: an empty name keeps the name.
        ...(body.name ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        privacy: privacyOf(body.privacy),
        ...(body.members_can_create_pipelines !== undefined
          ? { membersCanCreatePipelines: body.members_can_create_pipelines }
          : {}),
      });
      if (!res.team) throw new HttpError(404, "No team found");
      return renderTeam(res.team);
    },
  );

  route.delete(
    TEAM,
    {
      config: { scope: "write_teams" },
      schema: {
        operationId: "deleteTeam",
        summary: "Delete a team with its members and its pipeline and suite associations",
        tags,
        params: TeamParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      await clients.teams.deleteTeam(teamOf(request));
      return reply.status(204).send();
    },
  );
}
