import type { ServiceImpl } from "@connectrpc/connect";
import { TeamPrivacy, type TeamsService } from "@conveyor/proto/identity";
import { isUuid, newId } from "@conveyor/runtime";
import { insertNamed, nameAndSlug, requireOrganization } from "./organization-records.js";
import { createPipelineAccessRpcs } from "./pipeline-access-rpc.js";
import { createTeamMemberRpcs } from "./team-members-rpc.js";
import { teamMessage } from "./team-message.js";
import { createTeamPipelineRpcs } from "./team-pipelines-rpc.js";
import type { TeamDoc } from "./team-repository.js";
import { createTeamSuiteRpcs } from "./team-suites-rpc.js";
import { createTeamsContext, type TeamsServiceDeps } from "./teams-context.js";

export type { TeamsServiceDeps };
export { teamMessage };

/**
 * The teams service: teams, their members and their pipeline and suite associations, suites, and team-based
 * pipeline access. Every decision about who may see or change what is the access policy's.
 */
export function createTeamsService(deps: TeamsServiceDeps): ServiceImpl<typeof TeamsService> {
  const ctx = createTeamsContext(deps);
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
        privacy: req.privacy === TeamPrivacy.SECRET ? "secret" : "visible",
        createdAt: now(),
      };
      await insertNamed(() => teams.insertTeam(team));
      return { team: teamMessage(team) };
    },

    async getTeam(req) {
      return { team: teamMessage((await visibleTeam(req)).team) };
    },

    ...createTeamSuiteRpcs(ctx),
    ...createTeamMemberRpcs(ctx),
    ...createTeamPipelineRpcs(ctx),
    ...createPipelineAccessRpcs(ctx),

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
