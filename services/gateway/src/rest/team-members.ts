/**
 * The team member routes: list, get, add, change the role of and remove a team's members (docs/compatibility.md#teams).
 */
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { renderTeamMember, TEAM_ROLES_IN_WORDS, TeamMemberSchema, teamRoleOf } from "../render/team.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, Slug } from "../route-declarations/params.js";
import type { RouteDeps } from "./route-deps.js";
import { bodyString, bodyValue, declaration, judged, list, paged, TEAM, TeamParams, teamOf } from "./teams-shared.js";

const MemberParams = Type.Object({ org: Slug, team: Id, user: Id });

const role = judged(BOUNDS.name, TEAM_ROLES_IN_WORDS);
const AddMemberBody = Type.Object({ user_id: judged(BOUNDS.id), role });
const UpdateMemberBody = Type.Object({ role });

/** The team member routes, with both path spellings of adding a member. */
export function teamMemberRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients } = deps;
  const route = typed(app);

  route.get(
    `${TEAM}/members`,
    list("listTeamMembers", "List a team's members", TeamMemberSchema),
    async (request, reply) => {
      const items = await paged(deps, request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamMembers({ ...teamOf(request), page, perPage });
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
      const res = await clients.teams.getTeamMember({ ...teamOf(request), userId: request.params.user });
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
        const res = await clients.teams.addTeamMember({
          ...teamOf(request),
          userId: bodyString(request.body, "user_id"),
          role: teamRoleOf(bodyValue(request.body, "role")),
        });
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
      const res = await clients.teams.updateTeamMember({
        ...teamOf(request),
        userId: request.params.user,
        role: teamRoleOf(bodyValue(request.body, "role")),
      });
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
      await clients.teams.removeTeamMember({ ...teamOf(request), userId: request.params.user });
      return reply.status(204).send();
    },
  );
}
