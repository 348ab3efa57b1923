import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  PipelineAccessLevel,
  Role,
  SuiteAccessLevel,
  TeamMemberRole,
  TeamPrivacy,
  type TeamsService,
} from "@conveyor/proto/identity";
import {
  createKeyedLock,
  failedPrecondition,
  invalidFields,
  isUuid,
  type KeyedLock,
  newId,
  notFound,
  pageWindow,
  permissionDenied,
  toTimestamp,
} from "@conveyor/runtime";
import {
  type Actor,
  accessOfLevel,
  canGivePipelineToTeam,
  canManageTeam,
  canSeeTeam,
  highestLevel,
  organizationPipelineAccess,
  pipelineAccessLevel,
} from "./access-policy.js";
import { createActors } from "./actors.js";
import { DuplicateError, type IdentityRepository, type UserDoc } from "./identity-repository.js";
import { userMessage } from "./identity-service.js";
import { insertNamed, nameAndSlug, requireOrganization } from "./organization-records.js";
import type {
  PipelineLevelName,
  SuiteDoc,
  SuiteLevelName,
  TeamDoc,
  TeamMemberDoc,
  TeamPipelineDoc,
  TeamPrivacyName,
  TeamRepository,
  TeamRoleName,
  TeamSuiteDoc,
} from "./team-repository.js";

export interface TeamsServiceDeps {
  identity: IdentityRepository;
  teams: TeamRepository;
  /**
   * Serializes read-check-write sections per team (the last-maintainer rule). A process-local keyed lock when
   * absent; main.ts gives a lease lock in MongoDB, so that the rule holds across replicas.
   */
  lock?: KeyedLock;
  now?: () => Date;
}

const ROLE_NAMES: Record<TeamMemberRole, TeamRoleName | undefined> = {
  [TeamMemberRole.UNSPECIFIED]: undefined,
  [TeamMemberRole.MEMBER]: "member",
  [TeamMemberRole.MAINTAINER]: "maintainer",
};
const ROLES: Record<TeamRoleName, TeamMemberRole> = {
  member: TeamMemberRole.MEMBER,
  maintainer: TeamMemberRole.MAINTAINER,
};
const LEVEL_NAMES: Record<PipelineAccessLevel, PipelineLevelName | undefined> = {
  [PipelineAccessLevel.UNSPECIFIED]: undefined,
  [PipelineAccessLevel.READ_ONLY]: "read_only",
  [PipelineAccessLevel.BUILD_AND_READ]: "build_and_read",
  [PipelineAccessLevel.MANAGE_BUILD_AND_READ]: "manage_build_and_read",
};
const LEVELS: Record<PipelineLevelName, PipelineAccessLevel> = {
  read_only: PipelineAccessLevel.READ_ONLY,
  build_and_read: PipelineAccessLevel.BUILD_AND_READ,
  manage_build_and_read: PipelineAccessLevel.MANAGE_BUILD_AND_READ,
};
const SUITE_LEVELS: Record<SuiteLevelName, SuiteAccessLevel> = {
  read: SuiteAccessLevel.READ,
  edit: SuiteAccessLevel.EDIT,
};
const PRIVACIES: Record<TeamPrivacyName, TeamPrivacy> = {
  visible: TeamPrivacy.VISIBLE,
  secret: TeamPrivacy.SECRET,
};

/** InvalidArgument in the form the team association routes answer: "Validation failed: <reasons>". */
function validationFailed(reasons: string[]): ConnectError {
  return new ConnectError(`Validation failed: ${reasons.join(", ")}`, Code.InvalidArgument);
}

export const teamMessage = (t: TeamDoc) => ({
  id: t._id,
  organizationId: t.organizationId,
  slug: t.slug,
  name: t.name,
  description: t.description,
  privacy: PRIVACIES[t.privacy],
  createdAt: toTimestamp(t.createdAt),
});

const suiteMessage = (s: SuiteDoc) => ({
  id: s._id,
  organizationId: s.organizationId,
  slug: s.slug,
  name: s.name,
  createdAt: toTimestamp(s.createdAt),
});

const teamPipelineMessage = (l: TeamPipelineDoc) => ({
  teamId: l.teamId,
  pipelineId: l.pipelineId,
  accessLevel: LEVELS[l.accessLevel],
  createdAt: toTimestamp(l.createdAt),
});

const teamSuiteMessage = (l: TeamSuiteDoc) => ({
  teamId: l.teamId,
  suiteId: l.suiteId,
  accessLevels: l.accessLevels.map((level) => SUITE_LEVELS[level]),
  createdAt: toTimestamp(l.createdAt),
});

/** Suite access levels as stored: each once, read before edit; undefined when empty or any is unspecified. */
function suiteLevelNames(levels: readonly SuiteAccessLevel[]): SuiteLevelName[] | undefined {
  if (levels.length === 0 || levels.some((l) => l !== SuiteAccessLevel.READ && l !== SuiteAccessLevel.EDIT)) {
    return undefined;
  }
  return (["read", "edit"] as const).filter((name) => levels.includes(SUITE_LEVELS[name]));
}

const ROLE_PROBLEM = "Role must be member or maintainer";
const LEVEL_PROBLEM = "Access level must be read_only, build_and_read or manage_build_and_read";
const SUITE_LEVEL_PROBLEM = "Access level must be a list of read and edit";
const LAST_MAINTAINER = "a team needs at least one maintainer";

/**
 * The teams service: teams, their members and their pipeline and suite associations, suites, and team-based
 * pipeline access. Every decision about who may see or change what is the access policy's.
 */
export function createTeamsService(deps: TeamsServiceDeps): ServiceImpl<typeof TeamsService> {
  const { identity, teams } = deps;
  const now = deps.now ?? (() => new Date());
  // Serializes read-check-write sections per team (the last-maintainer rule); see createKeyedLock for why.
  const withLock = deps.lock ?? createKeyedLock();

  const { organizationRole, actorOf } = createActors(identity, teams);

  /** The team and the actor; a team the actor may not see does not exist for them. */
  const visibleTeam = async (req: { organizationId: string; actorId: string; teamId: string }) => {
    const team = isUuid(req.teamId) ? await teams.findTeam(req.organizationId, req.teamId) : null;
    if (!team) throw notFound("team");
    const actor = await actorOf(req.organizationId, req.actorId, team._id);
    if (!canSeeTeam(actor, PRIVACIES[team.privacy])) throw notFound("team");
    return { team, actor };
  };

  /** The team, when the actor may also change it. */
  const manageableTeam = async (req: { organizationId: string; actorId: string; teamId: string }) => {
    const found = await visibleTeam(req);
    if (!canManageTeam(found.actor)) throw permissionDenied();
    return found.team;
  };

  const memberMessage = (m: TeamMemberDoc, user: UserDoc | null) => ({
    teamId: m.teamId,
    user: user ? userMessage(user) : { id: m.userId, name: m.userName },
    role: ROLES[m.role],
    createdAt: toTimestamp(m.createdAt),
  });

  const requireMember = async (teamId: string, userId: string) => {
    const member = isUuid(userId) ? await teams.findMember(teamId, userId) : null;
    if (!member) throw notFound("team member");
    return member;
  };

  const requireTeamPipeline = async (teamId: string, pipelineId: string) => {
    const link = isUuid(pipelineId) ? await teams.findTeamPipeline(teamId, pipelineId) : null;
    if (!link) throw notFound("team pipeline");
    return link;
  };

  const requireTeamSuite = async (teamId: string, suiteId: string) => {
    const link = isUuid(suiteId) ? await teams.findTeamSuite(teamId, suiteId) : null;
    if (!link) throw notFound("team suite");
    return link;
  };

  /** The levels a user's teams grant on pipelines of some organizations, highest per pipeline. */
  const teamLevels = async (organizationIds: readonly string[], userId: string, pipelineIds?: readonly string[]) => {
    const memberships = isUuid(userId) ? await teams.membershipsOfUser(organizationIds, userId) : [];
    const links =
      memberships.length === 0
        ? []
        : await teams.pipelinesOfTeams(
            memberships.map((m) => m.teamId),
            pipelineIds,
          );
    const roleInTeam = new Map(memberships.map((m) => [m.teamId, ROLES[m.role]]));
    const grants = new Map<string, Array<{ level: PipelineAccessLevel; teamRole: TeamMemberRole }>>();
    for (const link of links) {
      const list = grants.get(link.pipelineId) ?? [];
      list.push({ level: LEVELS[link.accessLevel], teamRole: roleInTeam.get(link.teamId) ?? TeamMemberRole.MEMBER });
      grants.set(link.pipelineId, list);
    }
    return grants;
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

    async createSuite(req) {
      const org = await requireOrganization(identity, req.organization);
      const { name, slug } = nameAndSlug(req.name);
      const suite: SuiteDoc = { _id: newId(), organizationId: org._id, slug, name, createdAt: now() };
      await insertNamed(() => teams.insertSuite(suite));
      return { suite: suiteMessage(suite) };
    },

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
      const role = ROLE_NAMES[req.role];
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
      const role = ROLE_NAMES[req.role];
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
      const level = LEVEL_NAMES[req.accessLevel];
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
      const level = LEVEL_NAMES[req.accessLevel];
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

    async checkPipelineTeams(req) {
      const ids = [...new Set(req.teamIds.map((id) => id.trim().toLowerCase()))];
      const found = new Map(
        (await teams.findTeams(req.organizationId, ids.filter(isUuid))).map((team) => [team._id, team]),
      );
      const problems = [];
      for (const id of ids) {
        const team = found.get(id);
        const actor = team ? await actorOf(req.organizationId, req.actorId, team._id) : undefined;
        if (!team || !actor || !canSeeTeam(actor, PRIVACIES[team.privacy])) {
          problems.push({ field: "teams", code: `has no team ${id} in this organization` });
        } else if (!canGivePipelineToTeam(actor)) {
          problems.push({ field: "teams", code: `can only include teams you are a member of, not ${team.name}` });
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
        else if (!LEVEL_NAMES[level]) problems.push({ field: `teams.${id}`, code: LEVEL_PROBLEM });
      }
      if (problems.length > 0) throw invalidFields(problems);
      const links: TeamPipelineDoc[] = [];
      for (const [id, level] of entries) {
        const link: TeamPipelineDoc = {
          _id: newId(),
          teamId: id,
          organizationId: req.organizationId,
          pipelineId: req.pipelineId.toLowerCase(),
          accessLevel: LEVEL_NAMES[level] ?? "read_only",
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
