/**
 * The team member RPCs: listing, adding, changing and removing a team's members, keeping a maintainer.
 */

import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { Role, type TeamsService } from "@conveyor/proto/identity";
import {
  failedPrecondition,
  isUuid,
  newId,
  notFound,
  pageWindow,
  TEAM_MEMBER_ROLES,
  toTimestamp,
} from "@conveyor/runtime";
import { DuplicateError, type UserDoc } from "../store/identity-repository.js";
import type { TeamMemberDoc } from "../store/team-repository.js";
import { userMessage } from "./identity-message.js";
import { LAST_MAINTAINER, ROLE_PROBLEM, type TeamsContext, validationFailed } from "./teams-context.js";

type TeamMemberRpcs = Pick<
  ServiceImpl<typeof TeamsService>,
  "listTeamMembers" | "getTeamMember" | "addTeamMember" | "updateTeamMember" | "removeTeamMember"
>;

/** A team's members. */
export function createTeamMemberRpcs(ctx: TeamsContext): TeamMemberRpcs {
  const { identity, teams, now, withLock, organizationRole, visibleTeam, manageableTeam } = ctx;

  const memberMessage = (m: TeamMemberDoc, user: UserDoc | null) => ({
    teamId: m.teamId,
    user: user ? userMessage(user) : { id: m.userId, name: m.userName },
    role: TEAM_MEMBER_ROLES.valueOf(m.role),
    createdAt: toTimestamp(m.createdAt),
  });

  const requireMember = async (teamId: string, userId: string) => {
    const member = isUuid(userId) ? await teams.findMember(teamId, userId) : null;
    if (!member) throw notFound("team member");
    return member;
  };

  return {
    async listTeamMembers(req) {
      const { team } = await visibleTeam(req);
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await teams.listMembers(team._id, skip, perPage);
      const users = new Map((await identity.findUsers(page.items.map((m) => m.userId))).map((u) => [u._id, u]));
      return {
        members: page.items.map((m) => memberMessage(m, users.get(m.userId) ?? null)),
        totalCount: page.total,
      };
    },

    async getTeamMember(req) {
      const { team } = await visibleTeam(req);
      const member = await requireMember(team._id, req.userId);
      return { member: memberMessage(member, await identity.findUser(member.userId)) };
    },

    async addTeamMember(req) {
      const team = await manageableTeam(req);
      const role = TEAM_MEMBER_ROLES.nameOf(req.role);
      const problems: string[] = [];
      let user: UserDoc | null = null;
      if (req.userId.trim() === "") problems.push("User can't be blank");
      else {
        user = isUuid(req.userId) ? await identity.findUser(req.userId) : null;
        // A user of another organization is answered as an unknown one: the answer must not tell that they exist.
        if (user && (await organizationRole(team.organizationId, user._id)) === Role.UNSPECIFIED) user = null;
        if (!user) problems.push("User could not be found");
      }
      if (!role) problems.push(ROLE_PROBLEM);
      if (problems.length > 0 || !user || !role) throw validationFailed(problems);
      const member: TeamMemberDoc = {
        _id: newId(),
        teamId: team._id,
        organizationId: team.organizationId,
        userId: user._id,
        userName: user.name,
        role,
        createdAt: now(),
      };
      try {
        await teams.insertMember(member);
      } catch (err) {
        if (err instanceof DuplicateError) {
          throw new ConnectError(
            "Validation failed: User is already a member of this team",
            Code.AlreadyExists,
            undefined,
            undefined,
            err,
          );
        }
        throw err;
      }
      return { member: memberMessage(member, user) };
    },

    async updateTeamMember(req) {
      const team = await manageableTeam(req);
      const role = TEAM_MEMBER_ROLES.nameOf(req.role);
      await requireMember(team._id, req.userId);
      if (!role) throw validationFailed([ROLE_PROBLEM]);
      return withLock(team._id, async () => {
        const current = await requireMember(team._id, req.userId);
        if (current.role === "maintainer" && role !== "maintainer" && (await teams.countMaintainers(team._id)) <= 1) {
          throw validationFailed([`Role can't be changed: ${LAST_MAINTAINER}`]);
        }
        const updated = await teams.setMemberRole(team._id, current.userId, role);
        if (!updated) throw notFound("team member");
        return { member: memberMessage(updated, await identity.findUser(updated.userId)) };
      });
    },

    async removeTeamMember(req) {
      const team = await manageableTeam(req);
      await requireMember(team._id, req.userId);
      return withLock(team._id, async () => {
        const current = await requireMember(team._id, req.userId);
        if (current.role === "maintainer" && (await teams.countMaintainers(team._id)) <= 1) {
          throw failedPrecondition(`Team member could not be removed: ${LAST_MAINTAINER}`);
        }
        if (!(await teams.removeMember(team._id, current.userId))) throw notFound("team member");
        return {};
      });
    },
  };
}
