/**
 * The pipeline access RPCs: checking and linking the teams a pipeline is given, and the access users have to
 * pipelines through their organization role and their teams.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import { PipelineAccessLevel, Role, type TeamsService } from "@conveyor/proto/identity";
import { invalidFields, isUuid, newId, PIPELINE_ACCESS_LEVELS } from "@conveyor/runtime";
import {
  accessOfLevel,
  canGivePipelineToTeam,
  canSeeTeam,
  highestLevel,
  isTeamMember,
  organizationPipelineAccess,
  pipelineAccessLevel,
} from "../domain/access-policy.js";
import { DuplicateError } from "../store/identity-repository.js";
import type { TeamPipelineDoc } from "../store/team-repository.js";
import { privacyOf, teamPipelineMessage } from "./team-message.js";
import { LEVEL_PROBLEM, type TeamsContext } from "./teams-context.js";

type PipelineAccessRpcs = Pick<
  ServiceImpl<typeof TeamsService>,
  "checkPipelineTeams" | "linkPipelineTeams" | "getPipelineAccess" | "listAccessiblePipelines"
>;

/** Team-based pipeline access, as the pipelines service and the gateway ask for it. */
export function createPipelineAccessRpcs(ctx: TeamsContext): PipelineAccessRpcs {
  const { identity, teams, now, organizationRole, actorOf, teamLevels } = ctx;

  return {
    async checkPipelineTeams(req) {
      const ids = [...new Set(req.teamIds.map((id) => id.trim().toLowerCase()))];
      const found = new Map(
        (await teams.findTeams(req.organizationId, ids.filter(isUuid))).map((team) => [team._id, team]),
      );
      const problems = [];
      for (const id of ids) {
        const team = found.get(id);
        const actor = team ? await actorOf(req.organizationId, req.actorId, team._id) : undefined;
        if (!team || !actor || !canSeeTeam(actor, privacyOf(team))) {
          problems.push({ field: "teams", code: `has no team ${id} in this organization` });
        } else if (!canGivePipelineToTeam(actor, team.membersCanCreatePipelines ?? true)) {
          const code = isTeamMember(actor)
            ? `can only include teams whose members may create pipelines, or that you maintain, not ${team.name}`
            : `can only include teams you are a member of, not ${team.name}`;
          problems.push({ field: "teams", code });
        }
      }
      if (problems.length > 0) throw invalidFields(problems);
      return {};
    },

    async linkPipelineTeams(req) {
      if (!isUuid(req.pipelineId)) throw invalidFields([{ field: "pipeline_id", code: "is not a pipeline UUID" }]);
      const entries = Object.entries(req.teams).map(([id, level]) => [id.toLowerCase(), level] as const);
      const found = new Map(
        (
          await teams.findTeams(
            req.organizationId,
            entries.map(([id]) => id),
          )
        ).map((t) => [t._id, t]),
      );
      const problems = [];
      for (const [id, level] of entries) {
        if (!found.has(id)) problems.push({ field: "teams", code: `has no team ${id} in this organization` });
        else if (!PIPELINE_ACCESS_LEVELS.nameOf(level)) problems.push({ field: `teams.${id}`, code: LEVEL_PROBLEM });
      }
      if (problems.length > 0) throw invalidFields(problems);
      const links: TeamPipelineDoc[] = [];
      for (const [id, level] of entries) {
        const link: TeamPipelineDoc = {
          _id: newId(),
          teamId: id,
          organizationId: req.organizationId,
          pipelineId: req.pipelineId.toLowerCase(),
          accessLevel: PIPELINE_ACCESS_LEVELS.nameOf(level) ?? "read_only",
          createdAt: now(),
        };
        try {
          await teams.insertTeamPipeline(link);
          links.push(link);
        } catch (err) {
          if (!(err instanceof DuplicateError)) throw err;
          const existing = await teams.findTeamPipeline(id, link.pipelineId);
          if (existing) links.push(existing);
        }
      }
      return { pipelines: links.map(teamPipelineMessage) };
    },

    async getPipelineAccess(req) {
      const org = isUuid(req.organizationId) ? await identity.findOrganization({ id: req.organizationId }) : null;
      const role = org ? await organizationRole(org._id, req.userId) : Role.UNSPECIFIED;
      const orgWide = org ? organizationPipelineAccess(role, org.teamsEnabled) : PipelineAccessLevel.UNSPECIFIED;
      const grants =
        orgWide === undefined && org ? await teamLevels([org._id], req.userId, req.pipelineIds) : new Map();
      return {
        pipelines: req.pipelineIds.map((id) =>
          accessOfLevel(pipelineAccessLevel(role, org?.teamsEnabled ?? false, grants.get(id.toLowerCase()) ?? []), id),
        ),
      };
    },

    async listAccessiblePipelines(req) {
      const orgs = await identity.findOrganizations(req.organizationIds.filter(isUuid));
      const byTeams: string[] = [];
      for (const org of orgs) {
        const role = await organizationRole(org._id, req.userId);
        if (role !== Role.UNSPECIFIED && organizationPipelineAccess(role, org.teamsEnabled) === undefined) {
          byTeams.push(org._id);
        }
      }
      if (byTeams.length === 0) return { pipelines: [] };
      const grants = await teamLevels(byTeams, req.userId);
      return {
        pipelines: [...grants].map(([pipelineId, list]) =>
          accessOfLevel(highestLevel(list.map((g) => g.level)), pipelineId),
        ),
      };
    },
  };
}
