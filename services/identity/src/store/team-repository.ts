import type { PipelineLevelName, SuiteLevelName, TeamPrivacyName, TeamRoleName } from "@conveyor/runtime";
import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import { DuplicateError, insertUnique, type Page } from "./identity-repository.js";

export interface TeamDoc {
  _id: string;
  organizationId: string;
  slug: string;
  name: string;
  description: string;
  privacy: TeamPrivacyName;
  createdAt: Date;
  /** Absent on teams stored before the setting: they allow it. */
  membersCanCreatePipelines?: boolean;
}

/** Which teams a list shows: only these ids, and secret ones only when named here (or all). */
export interface TeamListFilter {
  ids?: readonly string[];
  secretIds: readonly string[] | "all";
}

/** What an update may change of a team. */
export type TeamChange = Partial<
  Pick<TeamDoc, "name" | "slug" | "description" | "privacy" | "membersCanCreatePipelines">
>;

export interface TeamMemberDoc {
  _id: string;
  teamId: string;
  organizationId: string;
  userId: string;
  /** Denormalized from the user so member lists sort by name without a join. */
  userName: string;
  role: TeamRoleName;
  createdAt: Date;
}

export interface TeamPipelineDoc {
  _id: string;
  teamId: string;
  organizationId: string;
  pipelineId: string;
  accessLevel: PipelineLevelName;
  createdAt: Date;
}

export interface SuiteDoc {
  _id: string;
  organizationId: string;
  slug: string;
  name: string;
  createdAt: Date;
}

export interface TeamSuiteDoc {
  _id: string;
  teamId: string;
  organizationId: string;
  suiteId: string;
  accessLevels: SuiteLevelName[];
  createdAt: Date;
}

/** Persistence of teams, their members, pipeline and suite associations, and suites. */
export interface TeamRepository {
  insertTeam(team: TeamDoc): Promise<void>;
  findTeam(organizationId: string, id: string): Promise<TeamDoc | null>;
  findTeams(organizationId: string, ids: readonly string[]): Promise<TeamDoc[]>;
  /** A page of an organization's teams by name, as the filter lets through. */
  listTeams(organizationId: string, filter: TeamListFilter, skip: number, limit: number): Promise<Page<TeamDoc>>;
  /** Changes a team; null when there is none. A taken slug is a DuplicateError. */
  updateTeam(organizationId: string, id: string, change: TeamChange): Promise<TeamDoc | null>;
  /** Removes a team with its memberships and pipeline and suite associations; false when there was none. */
  deleteTeam(organizationId: string, id: string): Promise<boolean>;
  insertSuite(suite: SuiteDoc): Promise<void>;
  findSuite(organizationId: string, id: string): Promise<SuiteDoc | null>;

  /** A second membership of the same user in the same team is a DuplicateError. */
  insertMember(member: TeamMemberDoc): Promise<void>;
  findMember(teamId: string, userId: string): Promise<TeamMemberDoc | null>;
  listMembers(teamId: string, skip: number, limit: number): Promise<Page<TeamMemberDoc>>;
  countMaintainers(teamId: string): Promise<number>;
  /** Returns the membership as stored afterwards, or null when there is none. */
  setMemberRole(teamId: string, userId: string, role: TeamRoleName): Promise<TeamMemberDoc | null>;
  removeMember(teamId: string, userId: string): Promise<boolean>;
  /** The user's team memberships within the given organizations. */
  membershipsOfUser(organizationIds: readonly string[], userId: string): Promise<TeamMemberDoc[]>;

  /** A second association of the same pipeline with the same team is a DuplicateError. */
  insertTeamPipeline(link: TeamPipelineDoc): Promise<void>;
  findTeamPipeline(teamId: string, pipelineId: string): Promise<TeamPipelineDoc | null>;
  /** A page of a team's pipeline associations, only of the given pipelines when they are given. */
  listTeamPipelines(
    teamId: string,
    skip: number,
    limit: number,
    pipelineIds?: readonly string[],
  ): Promise<Page<TeamPipelineDoc>>;
  setTeamPipelineLevel(teamId: string, pipelineId: string, level: PipelineLevelName): Promise<TeamPipelineDoc | null>;
  removeTeamPipeline(teamId: string, pipelineId: string): Promise<boolean>;
  /** The pipeline associations of the given teams, optionally only for the given pipelines. */
  pipelinesOfTeams(teamIds: readonly string[], pipelineIds?: readonly string[]): Promise<TeamPipelineDoc[]>;
  /** Drops every association with a pipeline that no longer exists. */
  removePipelineEverywhere(pipelineId: string): Promise<void>;

  /** A second association of the same suite with the same team is a DuplicateError. */
  insertTeamSuite(link: TeamSuiteDoc): Promise<void>;
  findTeamSuite(teamId: string, suiteId: string): Promise<TeamSuiteDoc | null>;
  listTeamSuites(teamId: string, skip: number, limit: number): Promise<Page<TeamSuiteDoc>>;
  setTeamSuiteLevels(teamId: string, suiteId: string, levels: SuiteLevelName[]): Promise<TeamSuiteDoc | null>;
  removeTeamSuite(teamId: string, suiteId: string): Promise<boolean>;
}

/** The MongoDB implementation; creates its indexes (the unique ones are the invariants) before returning. */
export async function createMongoTeamRepository(db: Db): Promise<TeamRepository> {
  const teams: Collection<TeamDoc> = db.collection("teams");
  const members: Collection<TeamMemberDoc> = db.collection("team_members");
  const teamPipelines: Collection<TeamPipelineDoc> = db.collection("team_pipelines");
  const suites: Collection<SuiteDoc> = db.collection("suites");
  const teamSuites: Collection<TeamSuiteDoc> = db.collection("team_suites");
  await Promise.all([
    teams.createIndex({ organizationId: 1, slug: 1 }, { unique: true, name: "org_slug_unique" }),
    teams.createIndex({ organizationId: 1, name: 1, _id: 1 }, { name: "org_teams_by_name" }),
    suites.createIndex({ organizationId: 1, slug: 1 }, { unique: true, name: "org_slug_unique" }),
    members.createIndex({ teamId: 1, userId: 1 }, { unique: true, name: "team_user_unique" }),
    members.createIndex({ teamId: 1, userName: 1, userId: 1 }, { name: "team_members_by_name" }),
    members.createIndex({ userId: 1, organizationId: 1 }, { name: "user_teams" }),
    teamPipelines.createIndex({ teamId: 1, pipelineId: 1 }, { unique: true, name: "team_pipeline_unique" }),
    teamPipelines.createIndex({ teamId: 1, createdAt: 1, pipelineId: 1 }, { name: "team_pipelines_in_order" }),
    teamPipelines.createIndex({ pipelineId: 1 }, { name: "pipeline_teams" }),
    teamSuites.createIndex({ teamId: 1, suiteId: 1 }, { unique: true, name: "team_suite_unique" }),
    teamSuites.createIndex({ teamId: 1, createdAt: 1, suiteId: 1 }, { name: "team_suites_in_order" }),
  ]);

  const pageOf = async <T extends { teamId: string }>(
    c: Collection<T>,
    teamId: string,
    sort: Record<string, 1>,
    skip: number,
    limit: number,
    extra: Record<string, unknown> = {},
  ): Promise<Page<T>> => {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's Filter<T> does not narrow for a generic T.
    const filter = { teamId, ...extra } as any;
    const [items, total] = await Promise.all([
      c.find(filter).sort(sort).skip(skip).limit(limit).toArray(),
      c.countDocuments(filter),
    ]);
    return { items: items as T[], total };
  };

  return {
    insertTeam: (team) => insertUnique(teams, team, "slug"),
    findTeam: (organizationId, id) => teams.findOne({ _id: id, organizationId }),
    findTeams: (organizationId, ids) => teams.find({ _id: { $in: [...ids] }, organizationId }).toArray(),
    async listTeams(organizationId, filter, skip, limit) {
      const query = {
        organizationId,
        ...(filter.ids ? { _id: { $in: [...filter.ids] } } : {}),
        ...(filter.secretIds === "all"
          ? {}
          : { $or: [{ privacy: { $ne: "secret" as const } }, { _id: { $in: [...filter.secretIds] } }] }),
      };
      const [items, total] = await Promise.all([
        teams.find(query).sort({ name: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        teams.countDocuments(query),
      ]);
      return { items, total };
    },
    async updateTeam(organizationId, id, change) {
      try {
        return await teams.findOneAndUpdate({ _id: id, organizationId }, { $set: change }, { returnDocument: "after" });
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateError("slug", { cause: err });
        throw err;
      }
    },
    async deleteTeam(organizationId, id) {
      const removed = (await teams.deleteOne({ _id: id, organizationId })).deletedCount === 1;
      // Its associations go too; a removal cut off half-way leaves links of a team no lookup finds any more.
      await Promise.all([
        members.deleteMany({ teamId: id }),
        teamPipelines.deleteMany({ teamId: id }),
        teamSuites.deleteMany({ teamId: id }),
      ]);
      return removed;
    },
    insertSuite: (suite) => insertUnique(suites, suite, "slug"),
    findSuite: (organizationId, id) => suites.findOne({ _id: id, organizationId }),

    insertMember: (member) => insertUnique(members, member, "user"),
    findMember: (teamId, userId) => members.findOne({ teamId, userId }),
    listMembers: (teamId, skip, limit) => pageOf(members, teamId, { userName: 1, userId: 1 }, skip, limit),
    countMaintainers: (teamId) => members.countDocuments({ teamId, role: "maintainer" }),
    setMemberRole: (teamId, userId, role) =>
      members.findOneAndUpdate({ teamId, userId }, { $set: { role } }, { returnDocument: "after" }),
    async removeMember(teamId, userId) {
      return (await members.deleteOne({ teamId, userId })).deletedCount === 1;
    },
    membershipsOfUser: (organizationIds, userId) =>
      members.find({ userId, organizationId: { $in: [...organizationIds] } }).toArray(),

    insertTeamPipeline: (link) => insertUnique(teamPipelines, link, "pipeline"),
    findTeamPipeline: (teamId, pipelineId) => teamPipelines.findOne({ teamId, pipelineId }),
    listTeamPipelines: (teamId, skip, limit, pipelineIds) =>
      pageOf(
        teamPipelines,
        teamId,
        { createdAt: 1, pipelineId: 1 },
        skip,
        limit,
        pipelineIds ? { pipelineId: { $in: [...pipelineIds] } } : {},
      ),
    setTeamPipelineLevel: (teamId, pipelineId, accessLevel) =>
      teamPipelines.findOneAndUpdate({ teamId, pipelineId }, { $set: { accessLevel } }, { returnDocument: "after" }),
    async removeTeamPipeline(teamId, pipelineId) {
      return (await teamPipelines.deleteOne({ teamId, pipelineId })).deletedCount === 1;
    },
    pipelinesOfTeams: (teamIds, pipelineIds) =>
      teamPipelines
        .find({ teamId: { $in: [...teamIds] }, ...(pipelineIds ? { pipelineId: { $in: [...pipelineIds] } } : {}) })
        .toArray(),
    async removePipelineEverywhere(pipelineId) {
      await teamPipelines.deleteMany({ pipelineId });
    },

    insertTeamSuite: (link) => insertUnique(teamSuites, link, "suite"),
    findTeamSuite: (teamId, suiteId) => teamSuites.findOne({ teamId, suiteId }),
    listTeamSuites: (teamId, skip, limit) => pageOf(teamSuites, teamId, { createdAt: 1, suiteId: 1 }, skip, limit),
    setTeamSuiteLevels: (teamId, suiteId, accessLevels) =>
      teamSuites.findOneAndUpdate({ teamId, suiteId }, { $set: { accessLevels } }, { returnDocument: "after" }),
    async removeTeamSuite(teamId, suiteId) {
      return (await teamSuites.deleteOne({ teamId, suiteId })).deletedCount === 1;
    },
  };
}
