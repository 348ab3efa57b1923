/**
 * The team RPCs: creating and reading teams, and the teams a user belongs to.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import type { TeamsService } from "@conveyor/proto/identity";
import { isUuid, newId, TEAM_PRIVACIES } from "@conveyor/runtime";
import type { TeamDoc } from "../store/team-repository.js";
import { insertNamed, nameAndSlug, requireOrganization } from "./records.js";
import { teamMessage } from "./team-message.js";
import type { TeamsContext } from "./teams-context.js";

type TeamRpcs = Pick<ServiceImpl<typeof TeamsService>, "createTeam" | "getTeam" | "listUserTeams">;

/** Teams themselves; who may see a team is the access policy's decision (visibleTeam). */
export function createTeamRpcs(ctx: TeamsContext): TeamRpcs {
  const { identity, teams, now, visibleTeam } = ctx;

  return {
    async createTeam(req) {
      const org = await requireOrganization(identity, req.organization);
      const { name, slug } = nameAndSlug(req.name);
      const team: TeamDoc = {
        _id: newId(),
        organizationId: org._id,
        slug,
        name,
        description: req.description.trim(),
        // Anything but secret (unspecified included) makes a visible team.
        privacy: TEAM_PRIVACIES.nameOf(req.privacy) ?? "visible",
        createdAt: now(),
      };
      await insertNamed(() => teams.insertTeam(team));
      return { team: teamMessage(team) };
    },

    async getTeam(req) {
      return { team: teamMessage((await visibleTeam(req)).team) };
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
