/**
 * The suite RPCs: creating suites, and the suites a team is given with their access levels.
 */

import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { TeamsService } from "@conveyor/proto/identity";
import { isUuid, newId, notFound, pageWindow } from "@conveyor/runtime";
import { suiteLevelNames } from "../domain/suite-levels.js";
import { DuplicateError } from "../store/identity-repository.js";
import type { SuiteDoc, TeamSuiteDoc } from "../store/team-repository.js";
import { insertNamed, nameAndSlug, requireOrganization } from "./records.js";
import { suiteMessage, teamSuiteMessage } from "./team-message.js";
import { SUITE_LEVEL_PROBLEM, type TeamsContext, validationFailed } from "./teams-context.js";

type TeamSuiteRpcs = Pick<
  ServiceImpl<typeof TeamsService>,
  "createSuite" | "listTeamSuites" | "getTeamSuite" | "addTeamSuite" | "updateTeamSuite" | "removeTeamSuite"
>;

/** Suites and a team's suite associations. */
export function createTeamSuiteRpcs(ctx: TeamsContext): TeamSuiteRpcs {
  const { identity, teams, now, visibleTeam, manageableTeam } = ctx;

  const requireTeamSuite = async (teamId: string, suiteId: string) => {
    const link = isUuid(suiteId) ? await teams.findTeamSuite(teamId, suiteId) : null;
    if (!link) throw notFound("team suite");
    return link;
  };

  return {
    async createSuite(req) {
      const org = await requireOrganization(identity, req.organization);
      const { name, slug } = nameAndSlug(req.name);
      const suite: SuiteDoc = { _id: newId(), organizationId: org._id, slug, name, createdAt: now() };
      await insertNamed(() => teams.insertSuite(suite));
      return { suite: suiteMessage(suite) };
    },

    async listTeamSuites(req) {
      const { team } = await visibleTeam(req);
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await teams.listTeamSuites(team._id, skip, perPage);
      return { suites: page.items.map(teamSuiteMessage), totalCount: page.total };
    },

    async getTeamSuite(req) {
      const { team } = await visibleTeam(req);
      return { suite: teamSuiteMessage(await requireTeamSuite(team._id, req.suiteId)) };
    },

    async addTeamSuite(req) {
      const team = await manageableTeam(req);
      const levels = suiteLevelNames(req.accessLevels);
      const problems: string[] = [];
      let suite: SuiteDoc | null = null;
      if (req.suiteId.trim() === "") problems.push("Suite can't be blank");
      else {
        suite = isUuid(req.suiteId) ? await teams.findSuite(team.organizationId, req.suiteId.toLowerCase()) : null;
        if (!suite) problems.push("Suite could not be found");
      }
      if (!levels) problems.push(SUITE_LEVEL_PROBLEM);
      if (problems.length > 0 || !suite || !levels) throw validationFailed(problems);
      const link: TeamSuiteDoc = {
        _id: newId(),
        teamId: team._id,
        organizationId: team.organizationId,
        suiteId: suite._id,
        accessLevels: levels,
        createdAt: now(),
      };
      try {
        await teams.insertTeamSuite(link);
      } catch (err) {
        if (err instanceof DuplicateError) {
          throw new ConnectError(
            "Validation failed: Suite has already been added to this team",
            Code.AlreadyExists,
            undefined,
            undefined,
            err,
          );
        }
        throw err;
      }
      return { suite: teamSuiteMessage(link) };
    },

    async updateTeamSuite(req) {
      const team = await manageableTeam(req);
      const current = await requireTeamSuite(team._id, req.suiteId);
      const levels = suiteLevelNames(req.accessLevels);
      if (!levels) throw validationFailed([SUITE_LEVEL_PROBLEM]);
      const updated = await teams.setTeamSuiteLevels(team._id, current.suiteId, levels);
      if (!updated) throw notFound("team suite");
      return { suite: teamSuiteMessage(updated) };
    },

    async removeTeamSuite(req) {
      const team = await manageableTeam(req);
      const current = await requireTeamSuite(team._id, req.suiteId);
      if (!(await teams.removeTeamSuite(team._id, current.suiteId))) throw notFound("team suite");
      return {};
    },
  };
}
