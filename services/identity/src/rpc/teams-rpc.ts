/**
 * The team RPCs: creating, listing, reading, changing and deleting teams, and the teams a user belongs to.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import { Role, TeamPrivacy, type TeamsService } from "@conveyor/proto/identity";
import {
  invalidFields,
  isUuid,
  newId,
  notFound,
  pageWindow,
  permissionDenied,
  TEAM_PRIVACIES,
} from "@conveyor/runtime";
import { canCreateTeam } from "../domain/access-policy.js";
import type { TeamChange, TeamDoc } from "../store/team-repository.js";
import { insertNamed, nameAndSlug, requireOrganization } from "./records.js";
import { teamMessage } from "./team-message.js";
import type { TeamsContext } from "./teams-context.js";

type TeamRpcs = Pick<
  ServiceImpl<typeof TeamsService>,
  "createTeam" | "getTeam" | "listTeams" | "updateTeam" | "deleteTeam" | "listUserTeams"
>;

/** The longest team description (docs/limits.md). */
export const MAX_TEAM_DESCRIPTION = 1000;

/** Teams themselves; who may see and change a team is the access policy's decision (visibleTeam, manageableTeam). */
export function createTeamRpcs(ctx: TeamsContext): TeamRpcs {
  const { identity, teams, now, actorOf, visibleTeam, manageableTeam } = ctx;

  const description = (value: string) => {
    const trimmed = value.trim();
    if (trimmed.length > MAX_TEAM_DESCRIPTION)
      throw invalidFields([{ field: "description", code: `is longer than ${MAX_TEAM_DESCRIPTION} characters` }]);
    return trimmed;
  };

  return {
    async createTeam(req) {
      const org = await requireOrganization(identity, req.organization);
      if (!canCreateTeam(await actorOf(org._id, req.actorId))) throw permissionDenied();
      const { name, slug } = nameAndSlug(req.name);
      const team: TeamDoc = {
        _id: newId(),
        organizationId: org._id,
        slug,
        name,
        description: description(req.description),
        // Anything but secret (unspecified included) makes a visible team.
        privacy: TEAM_PRIVACIES.nameOf(req.privacy) ?? "visible",
        createdAt: now(),
        membersCanCreatePipelines: req.membersCanCreatePipelines ?? true,
      };
      await insertNamed(() => teams.insertTeam(team));
      return { team: teamMessage(team) };
    },

    async getTeam(req) {
      return { team: teamMessage((await visibleTeam(req)).team) };
    },

    async listTeams(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      if (!isUuid(req.organizationId)) return { teams: [], totalCount: 0 };
      const actor = await actorOf(req.organizationId, req.actorId);
      if (actor.kind === "user" && actor.role !== Role.ADMIN && actor.role !== Role.MEMBER)
        throw notFound("organization");
      // Secret teams show to administrators (and operator tools) and to their own members.
      const own =
        actor.kind === "user" && actor.role !== Role.ADMIN
          ? (await teams.membershipsOfUser([req.organizationId], req.actorId)).map((m) => m.teamId)
          : "all";
      const ids =
        req.userId === ""
          ? undefined
          : isUuid(req.userId)
            ? (await teams.membershipsOfUser([req.organizationId], req.userId)).map((m) => m.teamId)
            : [];
      const page = await teams.listTeams(req.organizationId, { ids, secretIds: own }, skip, perPage);
      return { teams: page.items.map(teamMessage), totalCount: page.total };
    },

    async updateTeam(req) {
      const team = await manageableTeam(req);
      const change: TeamChange = {};
      if (req.name !== undefined) Object.assign(change, nameAndSlug(req.name));
      if (req.description !== undefined) change.description = description(req.description);
      if (req.privacy !== TeamPrivacy.UNSPECIFIED) change.privacy = TEAM_PRIVACIES.nameOf(req.privacy) ?? team.privacy;
      if (req.membersCanCreatePipelines !== undefined) change.membersCanCreatePipelines = req.membersCanCreatePipelines;
      if (Object.keys(change).length === 0) return { team: teamMessage(team) };
      let updated: TeamDoc | null = null;
      await insertNamed(async () => {
        updated = await teams.updateTeam(team.organizationId, team._id, change);
      });
      if (!updated) throw notFound("team");
      return { team: teamMessage(updated) };
    },

    async deleteTeam(req) {
      const team = await manageableTeam(req);
      if (!(await teams.deleteTeam(team.organizationId, team._id))) throw notFound("team");
      return {};
    },

    async listUserTeams(req) {
      if (!isUuid(req.organizationId) || !isUuid(req.userId)) return { teams: [] };
      const memberships = await teams.membershipsOfUser([req.organizationId], req.userId);
      if (memberships.length === 0) return { teams: [] };
      const found = await teams.findTeams(
        req.organizationId,
        memberships.map((m) => m.teamId),
      );
      return { teams: found.map(teamMessage) };
    },
  };
}
