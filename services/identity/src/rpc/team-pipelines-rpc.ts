/**
 * The team pipeline RPCs: the pipelines a team is given, and at which access level.
 */

import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { Role, TeamMemberRole, type TeamsService } from "@conveyor/proto/identity";
import { isUuid, newId, notFound, PIPELINE_ACCESS_LEVELS, pageWindow } from "@conveyor/runtime";
import { type Actor, organizationPipelineAccess } from "../domain/access-policy.js";
import { DuplicateError } from "../store/identity-repository.js";
import type { TeamPipelineDoc } from "../store/team-repository.js";
import { teamPipelineMessage } from "./team-message.js";
import { LEVEL_PROBLEM, type TeamsContext, validationFailed } from "./teams-context.js";

type TeamPipelineRpcs = Pick<
  ServiceImpl<typeof TeamsService>,
  "listTeamPipelines" | "getTeamPipeline" | "addTeamPipeline" | "updateTeamPipeline" | "removeTeamPipeline"
>;

/** A team's pipeline associations. */
export function createTeamPipelineRpcs(ctx: TeamsContext): TeamPipelineRpcs {
  const { identity, teams, now, visibleTeam, manageableTeam, teamLevels } = ctx;

  const requireTeamPipeline = async (teamId: string, pipelineId: string) => {
    const link = isUuid(pipelineId) ? await teams.findTeamPipeline(teamId, pipelineId) : null;
    if (!link) throw notFound("team pipeline");
    return link;
  };

  /**
   * The pipelines of the organization an actor looking at a team may read, where that limits what the team's
   * pipeline list shows (a visible team's list must not name pipelines the viewer cannot see): undefined when the
   * actor reads all of them (operators, administrators, members of organizations without teams) or all of the team's
   * (its members).
   */
  const readableByActor = async (organizationId: string, actorId: string, actor: Actor) => {
    if (actor.kind === "operator" || (actor.teamRole ?? TeamMemberRole.UNSPECIFIED) !== TeamMemberRole.UNSPECIFIED)
      return undefined;
    const org = await identity.findOrganization({ id: organizationId });
    if (org && organizationPipelineAccess(actor.role, org.teamsEnabled) !== undefined) {
      return actor.role === Role.UNSPECIFIED ? [] : undefined;
    }
    return [...(await teamLevels([organizationId], actorId)).keys()];
  };

  return {
    async listTeamPipelines(req) {
      const { team, actor } = await visibleTeam(req);
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const readable = await readableByActor(team.organizationId, req.actorId, actor);
      const page = await teams.listTeamPipelines(team._id, skip, perPage, readable);
      return { pipelines: page.items.map(teamPipelineMessage), totalCount: page.total };
    },

    async getTeamPipeline(req) {
      const { team, actor } = await visibleTeam(req);
      const link = await requireTeamPipeline(team._id, req.pipelineId);
      const readable = await readableByActor(team.organizationId, req.actorId, actor);
      if (readable && !readable.includes(link.pipelineId)) throw notFound("team pipeline");
      return { pipeline: teamPipelineMessage(link) };
    },

    async addTeamPipeline(req) {
      const team = await manageableTeam(req);
      const level = PIPELINE_ACCESS_LEVELS.nameOf(req.accessLevel);
      const problems: string[] = [];
      if (!isUuid(req.pipelineId)) problems.push("Pipeline could not be found");
      if (!level) problems.push(LEVEL_PROBLEM);
      if (problems.length > 0 || !level) throw validationFailed(problems);
      const link: TeamPipelineDoc = {
        _id: newId(),
        teamId: team._id,
        organizationId: team.organizationId,
        pipelineId: req.pipelineId.toLowerCase(),
        accessLevel: level,
        createdAt: now(),
      };
      try {
        await teams.insertTeamPipeline(link);
      } catch (err) {
        if (err instanceof DuplicateError) {
          throw new ConnectError(
            "Validation failed: Pipeline has already been added to this team",
            Code.AlreadyExists,
            undefined,
            undefined,
            err,
          );
        }
        throw err;
      }
      return { pipeline: teamPipelineMessage(link) };
    },

    async updateTeamPipeline(req) {
      const team = await manageableTeam(req);
      const current = await requireTeamPipeline(team._id, req.pipelineId);
      const level = PIPELINE_ACCESS_LEVELS.nameOf(req.accessLevel);
      if (!level) throw validationFailed([LEVEL_PROBLEM]);
      const updated = await teams.setTeamPipelineLevel(team._id, current.pipelineId, level);
      if (!updated) throw notFound("team pipeline");
      return { pipeline: teamPipelineMessage(updated) };
    },

    async removeTeamPipeline(req) {
      const team = await manageableTeam(req);
      const current = await requireTeamPipeline(team._id, req.pipelineId);
      if (!(await teams.removeTeamPipeline(team._id, current.pipelineId))) throw notFound("team pipeline");
      return {};
    },
  };
}
