import { DuplicateError, type Page } from "./identity-repository.js";
import type {
  SuiteDoc,
  TeamDoc,
  TeamMemberDoc,
  TeamPipelineDoc,
  TeamRepository,
  TeamSuiteDoc,
} from "./team-repository.js";

/** Binary string order, as MongoDB sorts without a collation. */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const copy = <T>(v: T): T => structuredClone(v);

function page<T>(items: T[], skip: number, limit: number): Page<T> {
  return { items: items.slice(skip, skip + limit).map(copy), total: items.length };
}

/** An in-memory TeamRepository with the same unique rules as the MongoDB one, for unit tests. */
export function createMemoryTeamRepository(): TeamRepository {
  const teams = new Map<string, TeamDoc>();
  const suites = new Map<string, SuiteDoc>();
  const members: TeamMemberDoc[] = [];
  const teamPipelines: TeamPipelineDoc[] = [];
  const teamSuites: TeamSuiteDoc[] = [];

  const insertUnique = <T>(list: T[], doc: T, clash: (existing: T) => boolean, field: string) => {
    if (list.some(clash)) throw new DuplicateError(field);
    list.push(copy(doc));
  };
  const remove = <T>(list: T[], match: (doc: T) => boolean) => {
    const i = list.findIndex(match);
    if (i < 0) return false;
    list.splice(i, 1);
    return true;
  };
  const update = <T>(list: T[], match: (doc: T) => boolean, change: Partial<T>) => {
    const doc = list.find(match);
    if (!doc) return null;
    Object.assign(doc, copy(change));
    return copy(doc);
  };
  const byCreation = <T extends { createdAt: Date }>(key: (d: T) => string) => {
    return (a: T, b: T) => a.createdAt.getTime() - b.createdAt.getTime() || cmp(key(a), key(b));
  };

  return {
    async insertTeam(team) {
      const clash = [...teams.values()].some((t) => t.organizationId === team.organizationId && t.slug === team.slug);
      if (clash) throw new DuplicateError("slug");
      teams.set(team._id, copy(team));
    },
    findTeam: async (organizationId, id) => {
      const team = teams.get(id);
      return team && team.organizationId === organizationId ? copy(team) : null;
    },
    findTeams: async (organizationId, ids) =>
      ids.flatMap((id) => {
        const team = teams.get(id);
        return team && team.organizationId === organizationId ? [copy(team)] : [];
      }),
    async listTeams(organizationId, filter, skip, limit) {
      const shown = [...teams.values()]
        .filter((t) => t.organizationId === organizationId)
        .filter((t) => !filter.ids || filter.ids.includes(t._id))
        .filter((t) => filter.secretIds === "all" || t.privacy !== "secret" || filter.secretIds.includes(t._id))
        .sort((a, b) => cmp(a.name, b.name) || cmp(a._id, b._id));
      return page(shown, skip, limit);
    },
    async updateTeam(organizationId, id, change) {
      const team = teams.get(id);
      if (!team || team.organizationId !== organizationId) return null;
      const { slug } = change;
      const others = [...teams.values()].filter((t) => t._id !== id && t.organizationId === organizationId);
      if (slug !== undefined && others.some((t) => t.slug === slug)) throw new DuplicateError("slug");
      Object.assign(team, copy(change));
      return copy(team);
    },
    async deleteTeam(organizationId, id) {
      const team = teams.get(id);
      if (!team || team.organizationId !== organizationId) return false;
      teams.delete(id);
      for (const list of [members, teamPipelines, teamSuites] as Array<Array<{ teamId: string }>>) {
        for (let i = list.length - 1; i >= 0; i--) if (list[i]?.teamId === id) list.splice(i, 1);
      }
      return true;
    },
    async insertSuite(suite) {
      const clash = [...suites.values()].some(
        (s) => s.organizationId === suite.organizationId && s.slug === suite.slug,
      );
      if (clash) throw new DuplicateError("slug");
      suites.set(suite._id, copy(suite));
    },
    findSuite: async (organizationId, id) => {
      const suite = suites.get(id);
      return suite && suite.organizationId === organizationId ? copy(suite) : null;
    },

    insertMember: async (member) =>
      insertUnique(members, member, (m) => m.teamId === member.teamId && m.userId === member.userId, "user"),
    findMember: async (teamId, userId) => copy(members.find((m) => m.teamId === teamId && m.userId === userId) ?? null),
    listMembers: async (teamId, skip, limit) =>
      page(
        members
          .filter((m) => m.teamId === teamId)
          .sort((a, b) => cmp(a.userName, b.userName) || cmp(a.userId, b.userId)),
        skip,
        limit,
      ),
    countMaintainers: async (teamId) => members.filter((m) => m.teamId === teamId && m.role === "maintainer").length,
    setMemberRole: async (teamId, userId, role) =>
      update(members, (m) => m.teamId === teamId && m.userId === userId, { role }),
    removeMember: async (teamId, userId) => remove(members, (m) => m.teamId === teamId && m.userId === userId),
    membershipsOfUser: async (organizationIds, userId) =>
      members.filter((m) => m.userId === userId && organizationIds.includes(m.organizationId)).map(copy),

    insertTeamPipeline: async (link) =>
      insertUnique(
        teamPipelines,
        link,
        (l) => l.teamId === link.teamId && l.pipelineId === link.pipelineId,
        "pipeline",
      ),
    findTeamPipeline: async (teamId, pipelineId) =>
      copy(teamPipelines.find((l) => l.teamId === teamId && l.pipelineId === pipelineId) ?? null),
    listTeamPipelines: async (teamId, skip, limit, pipelineIds) =>
      page(
        teamPipelines
          .filter((l) => l.teamId === teamId && (!pipelineIds || pipelineIds.includes(l.pipelineId)))
          .sort(byCreation((l) => l.pipelineId)),
        skip,
        limit,
      ),
    setTeamPipelineLevel: async (teamId, pipelineId, accessLevel) =>
      update(teamPipelines, (l) => l.teamId === teamId && l.pipelineId === pipelineId, { accessLevel }),
    removeTeamPipeline: async (teamId, pipelineId) =>
      remove(teamPipelines, (l) => l.teamId === teamId && l.pipelineId === pipelineId),
    pipelinesOfTeams: async (teamIds, pipelineIds) =>
      teamPipelines
        .filter((l) => teamIds.includes(l.teamId) && (!pipelineIds || pipelineIds.includes(l.pipelineId)))
        .map(copy),
    async removePipelineEverywhere(pipelineId) {
      while (remove(teamPipelines, (l) => l.pipelineId === pipelineId)) {}
    },

    insertTeamSuite: async (link) =>
      insertUnique(teamSuites, link, (l) => l.teamId === link.teamId && l.suiteId === link.suiteId, "suite"),
    findTeamSuite: async (teamId, suiteId) =>
      copy(teamSuites.find((l) => l.teamId === teamId && l.suiteId === suiteId) ?? null),
    listTeamSuites: async (teamId, skip, limit) =>
      page(teamSuites.filter((l) => l.teamId === teamId).sort(byCreation((l) => l.suiteId)), skip, limit),
    setTeamSuiteLevels: async (teamId, suiteId, accessLevels) =>
      update(teamSuites, (l) => l.teamId === teamId && l.suiteId === suiteId, { accessLevels }),
    removeTeamSuite: async (teamId, suiteId) => remove(teamSuites, (l) => l.teamId === teamId && l.suiteId === suiteId),
  };
}
