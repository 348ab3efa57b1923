import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db, Filter } from "mongodb";
import type { BrokenReason, BuildState, JobState, JobType } from "./domain/types.js";

export interface UserSnapshot {
  id: string;
  name: string;
  email: string;
  avatarUrl: string | null;
  createdAt: Date | null;
}

export interface BuildDoc {
  _id: string;
  organizationId: string;
  pipelineId: string;
  pipelineSlug: string;
  number: number;
  state: BuildState;
  blocked: boolean;
  cancelRequested: boolean;
  cancelReason: string | null;
  message: string;
  commit: string;
  branch: string;
  /** Build env and meta-data are user data whose keys may hold dots: stored as JSON text. */
  envJson: string;
  metaDataJson: string;
  /** "key=value" pairs of the meta-data, for the meta_data filter. */
  metaPairs: string[];
  source: string;
  creator: UserSnapshot | null;
  author: { name: string; email: string } | null;
  pullRequest: { id: string; base: string; repository: string } | null;
  rebuiltFrom: { id: string; number: number } | null;
  cleanCheckout: boolean;
  createdAt: Date;
  scheduledAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Incremented by every update: the compare-and-set guard. */
  version: number;
}

export interface AgentSnapshot {
  id: string;
  name: string;
  hostname: string;
  ipAddress: string;
  userAgent: string;
  connectionState: string;
  createdAt: Date | null;
}

export interface JobDoc {
  _id: string;
  buildId: string;
  organizationId: string;
  pipelineId: string;
  buildNumber: number;
  type: JobType;
  stepIndex: number;
  stepId: string;
  stepKey: string | null;
  /** The cluster of the pipeline when the job was created. */
  clusterId?: string | null;
  state: JobState;
  name: string;
  label: string;
  command: string | null;
  agentQueryRules: string[];
  envJson: string;
  artifactPaths: string | null;
  timeoutInMinutes: number | null;
  priority: number;
  parallelGroupIndex: number | null;
  parallelGroupTotal: number | null;
  concurrency: number | null;
  concurrencyGroup: string | null;
  dependsOn: string[];
  allowDependencyFailure: boolean;
  allowFailureOf: string[];
  continueOnFailure: boolean;
  blockedState: "passed" | "failed" | "running" | null;
  isInput: boolean;
  softFailJson: string;
  exitStatus: number | null;
  softFailed: boolean;
  brokenReason: BrokenReason | null;
  retried: boolean;
  triggerJson: string | null;
  stepJson: string;
  agent: AgentSnapshot | null;
  createdAt: Date;
  scheduledAt: Date | null;
  runnableAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  unblockedAt: Date | null;
}

export interface BuildListFilter {
  /** Builds of every pipeline of these organizations… */
  organizationIds: readonly string[];
  /** …and of these pipelines (for callers who may see only some pipelines of an organization). */
  pipelineIds?: readonly string[];
  pipelineId?: string;
  branches?: readonly string[];
  commits?: readonly string[];
  createdFrom?: Date;
  createdTo?: Date;
  creatorId?: string;
  finishedFrom?: Date;
  metaPairs?: readonly string[];
  states?: readonly BuildState[];
}

/** The fields of a build that a compare-and-set update may change. */
export type BuildUpdate = Partial<
  Pick<BuildDoc, "state" | "blocked" | "cancelRequested" | "cancelReason" | "startedAt" | "finishedAt">
>;

/** The fields of a job that a compare-and-set update may change. */
export type JobUpdate = Partial<
  Pick<
    JobDoc,
    | "state"
    | "exitStatus"
    | "softFailed"
    | "agent"
    | "scheduledAt"
    | "runnableAt"
    | "startedAt"
    | "finishedAt"
    | "unblockedAt"
  >
>;

/** The unique (pipeline, number) index refused a build: another process took the number. */
export class DuplicateBuildNumberError extends Error {
  override name = "DuplicateBuildNumberError";
  constructor(
    readonly number: number,
    options?: ErrorOptions,
  ) {
    super(`build number ${number} is taken`, options);
  }
}

/** Persistence of builds, jobs and per-pipeline build numbers. */
export interface BuildRepository {
  /** The next build number of a pipeline: an atomic counter, so numbers never repeat (gaps are possible). */
  nextNumber(pipelineId: string): Promise<number>;
  /** Raises the counter to at least `number` (after another process took that number). */
  raiseNumber(pipelineId: string, number: number): Promise<void>;
  /** Inserts a build; a taken (pipeline, number) raises DuplicateBuildNumberError. */
  insertBuild(build: BuildDoc): Promise<void>;
  insertJobs(jobs: JobDoc[]): Promise<void>;
  findBuild(pipelineId: string, number: number): Promise<BuildDoc | null>;
  findBuildById(id: string): Promise<BuildDoc | null>;
  listBuilds(filter: BuildListFilter, skip: number, limit: number): Promise<BuildDoc[]>;
  jobsOf(buildIds: readonly string[]): Promise<JobDoc[]>;
  findJob(id: string): Promise<JobDoc | null>;
  /** Unfinished builds of a branch, for the skip/cancel intermediate rules. */
  unfinishedOnBranch(pipelineId: string, branch: string, beforeNumber: number): Promise<BuildDoc[]>;
  /** Updates a build only if its version is still `version`; returns the updated build or null. */
  updateBuild(id: string, version: number, update: BuildUpdate): Promise<BuildDoc | null>;
  /** Updates a job only if its state is still `from`; returns the updated job or null. */
  updateJob(id: string, from: JobState, update: JobUpdate): Promise<JobDoc | null>;
  /** Pipelines with unfinished builds, or builds finished since `since`: those whose counters may be stale. */
  activePipelines(since: Date): Promise<string[]>;
  /** Live counters of a pipeline. */
  pipelineCounts(pipelineId: string): Promise<{
    scheduledBuilds: number;
    runningBuilds: number;
    scheduledJobs: number;
    runningJobs: number;
    waitingJobs: number;
  }>;
}

const RUNNING_BUILD_STATES: BuildState[] = ["running", "failing", "canceling"];
const SCHEDULED_JOB_STATES: JobState[] = ["scheduled", "assigned"];
const RUNNING_JOB_STATES: JobState[] = ["accepted", "running", "canceling", "timing_out"];
const WAITING_JOB_STATES: JobState[] = ["pending", "waiting", "blocked", "limited", "limiting"];

/**
 * The filter and sort of a build list: a pipeline's builds by number, others newest first. Every combination is
 * served by one of the indexes createMongoBuildRepository makes (build-repository.int.test.ts checks the plans).
 */
export function buildListQuery(f: BuildListFilter): { filter: Filter<BuildDoc>; sort: Record<string, 1 | -1> } {
  const scope: Filter<BuildDoc>[] = [];
  if (f.organizationIds.length > 0) scope.push({ organizationId: { $in: [...f.organizationIds] } });
  if (f.pipelineIds?.length) scope.push({ pipelineId: { $in: [...f.pipelineIds] } });
  const q: Filter<BuildDoc> = scope.length === 1 ? { ...scope[0] } : { $or: scope };
  if (f.pipelineId) q.pipelineId = f.pipelineId;
  if (f.branches?.length) q.branch = { $in: [...f.branches] };
  if (f.commits?.length) q.commit = { $in: [...f.commits] };
  if (f.states?.length) {
    // A build waiting at a block step is stored with the state it shows (its blocked_state) and blocked: true;
    // the "blocked" filter means those, and the other states mean builds that are not blocked.
    const plain = f.states.filter((st) => st !== "blocked");
    const byState = { state: { $in: plain }, blocked: false };
    if (f.states.includes("blocked")) {
      const either = plain.length > 0 ? [byState, { blocked: true }] : [{ blocked: true }];
      q.$and = [...(q.$and ?? []), { $or: either }];
    } else Object.assign(q, byState);
  }
  if (f.creatorId) q["creator.id"] = f.creatorId;
  if (f.metaPairs?.length) q.metaPairs = { $all: [...f.metaPairs] };
  if (f.createdFrom || f.createdTo) {
    q.createdAt = { ...(f.createdFrom ? { $gte: f.createdFrom } : {}), ...(f.createdTo ? { $lt: f.createdTo } : {}) };
  }
  if (f.finishedFrom) q.finishedAt = { $gte: f.finishedFrom };
  const sort: Record<string, 1 | -1> = f.pipelineId ? { number: -1 } : { createdAt: -1, _id: -1 };
  return { filter: q, sort };
}

/** Above this many organizations and pipelines a list is one query (sorted in full) rather than one per scope. */
const MAX_SPLIT_SCOPES = 32;

/**
 * The queries of one build list. A list across several organizations or pipelines (a user's `/v2/builds`, or the
 * pipelines a team member may read) is one query per organization and per pipeline, because an index gives one
 * organization's or one pipeline's builds newest first, while a single `$in` query must sort every match.
 * mergeBuildPages puts them together.
 */
export function splitBuildList(f: BuildListFilter): BuildListFilter[] {
  if (f.pipelineId) return [f];
  const scopes: BuildListFilter[] = [
    ...f.organizationIds.map((id) => ({ ...f, organizationIds: [id], pipelineIds: [] })),
    ...(f.pipelineIds ?? []).map((id) => ({ ...f, organizationIds: [], pipelineIds: [id] })),
  ];
  return scopes.length <= 1 || scopes.length > MAX_SPLIT_SCOPES ? [f] : scopes;
}

/**
 * One page (skip, limit) of the builds of several lists, each already newest first and holding at least its own
 * first skip + limit builds: newest first by createdAt then _id (the lists' own order), a build once.
 */
export function mergeBuildPages<T extends { _id: string; createdAt: Date }>(
  pages: readonly (readonly T[])[],
  skip: number,
  limit: number,
): T[] {
  const seen = new Set<string>();
  const all: T[] = [];
  for (const page of pages) {
    for (const build of page) {
      if (seen.has(build._id)) continue;
      seen.add(build._id);
      all.push(build);
    }
  }
  all.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0));
  return all.slice(skip, skip + limit);
}

const RETIRED_BUILD_INDEXES = ["org_finished"];

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoBuildRepository(db: Db): Promise<BuildRepository> {
  const builds: Collection<BuildDoc> = db.collection("builds");
  const jobs: Collection<JobDoc> = db.collection("jobs");
  const counters: Collection<{ _id: string; seq: number }> = db.collection("build_numbers");
  await Promise.all([
    builds.createIndex({ pipelineId: 1, number: -1 }, { unique: true, name: "pipeline_number_unique" }),
    builds.createIndex({ organizationId: 1, createdAt: -1, _id: -1 }, { name: "org_newest_first" }),
    builds.createIndex({ pipelineId: 1, createdAt: -1, _id: -1 }, { name: "pipeline_newest_first" }),
    builds.createIndex({ pipelineId: 1, branch: 1, number: -1 }, { name: "pipeline_branch" }),
    builds.createIndex({ organizationId: 1, branch: 1, createdAt: -1 }, { name: "org_branch" }),
    builds.createIndex({ organizationId: 1, state: 1, createdAt: -1 }, { name: "org_state" }),
    builds.createIndex({ pipelineId: 1, state: 1, number: -1 }, { name: "pipeline_state" }),
    builds.createIndex({ organizationId: 1, commit: 1, createdAt: -1 }, { name: "org_commit" }),
    builds.createIndex({ organizationId: 1, "creator.id": 1, createdAt: -1 }, { name: "org_creator" }),
    builds.createIndex({ organizationId: 1, metaPairs: 1, createdAt: -1 }, { name: "org_meta" }),
    // activePipelines: unfinished (finishedAt null) and recently finished builds, every 30 s
    builds.createIndex({ finishedAt: -1 }, { name: "finished" }),
    jobs.createIndex({ buildId: 1, stepIndex: 1, parallelGroupIndex: 1 }, { name: "build_jobs" }),
    jobs.createIndex({ pipelineId: 1, state: 1 }, { name: "pipeline_job_state" }),
  ]);
  // Indexes an earlier version made and lists no longer use. "org_finished" (organization, finishedAt) served
  // finished_from by sorting every match; org_newest_first serves it in order, reading only up to the page's end.
  const existing = new Set((await builds.listIndexes().toArray()).map((index) => String(index.name)));
  for (const name of RETIRED_BUILD_INDEXES) if (existing.has(name)) await builds.dropIndex(name);

  return {
    async nextNumber(pipelineId) {
      // Two first builds of a pipeline may both try to insert its counter; the loser's upsert fails on the
      // unique _id and simply increments the counter the winner created.
      for (let attempt = 0; ; attempt++) {
        try {
          const doc = await counters.findOneAndUpdate(
            { _id: pipelineId },
            { $inc: { seq: 1 } },
            { upsert: true, returnDocument: "after" },
          );
          if (!doc) throw new Error("build number counter returned nothing");
          return doc.seq;
        } catch (err) {
          if (!isDuplicateKeyError(err) || attempt >= 5) throw err;
        }
      }
    },
    async raiseNumber(pipelineId, number) {
      await counters.updateOne({ _id: pipelineId }, { $max: { seq: number } }, { upsert: true });
    },
    async insertBuild(build) {
      try {
        await builds.insertOne(build);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateBuildNumberError(build.number, { cause: err });
        throw err;
      }
    },
    async insertJobs(jobDocs) {
      if (jobDocs.length > 0) await jobs.insertMany(jobDocs);
    },
    findBuild: (pipelineId, number) => builds.findOne({ pipelineId, number }),
    findBuildById: (id) => builds.findOne({ _id: id }),
    async listBuilds(f, skip, limit) {
      const parts = splitBuildList(f);
      if (parts.length === 1) {
        const { filter, sort } = buildListQuery(f);
        return builds.find(filter).sort(sort).skip(skip).limit(limit).toArray();
      }
      const pages = await Promise.all(
        parts.map((part) => {
          const { filter, sort } = buildListQuery(part);
          return builds
            .find(filter)
            .sort(sort)
            .limit(skip + limit)
            .toArray();
        }),
      );
      return mergeBuildPages(pages, skip, limit);
    },
    jobsOf: (buildIds) =>
      buildIds.length === 0
        ? Promise.resolve([])
        : jobs
            .find({ buildId: { $in: [...buildIds] } })
            .sort({ buildId: 1, stepIndex: 1, parallelGroupIndex: 1 })
            .toArray(),
    findJob: (id) => jobs.findOne({ _id: id }),
    unfinishedOnBranch: (pipelineId, branch, beforeNumber) =>
      builds
        .find({
          pipelineId,
          branch,
          number: { $lt: beforeNumber },
          state: { $in: ["scheduled", "running", "failing", "blocked", "passed"] },
          finishedAt: null,
        })
        .toArray(),
    updateBuild: (id, version, update) =>
      builds.findOneAndUpdate(
        { _id: id, version },
        { $set: { ...update, version: version + 1 } },
        { returnDocument: "after" },
      ),
    updateJob: (id, from, update) =>
      jobs.findOneAndUpdate({ _id: id, state: from }, { $set: update }, { returnDocument: "after" }),
    async activePipelines(since) {
      const ids = await builds.distinct("pipelineId", { $or: [{ finishedAt: null }, { finishedAt: { $gte: since } }] });
      return ids.map(String);
    },
    async pipelineCounts(pipelineId) {
      const [scheduledBuilds, runningBuilds, scheduledJobs, runningJobs, waitingJobs] = await Promise.all([
        builds.countDocuments({ pipelineId, state: "scheduled" }),
        builds.countDocuments({ pipelineId, state: { $in: RUNNING_BUILD_STATES } }),
        jobs.countDocuments({ pipelineId, state: { $in: SCHEDULED_JOB_STATES } }),
        jobs.countDocuments({ pipelineId, state: { $in: RUNNING_JOB_STATES } }),
        jobs.countDocuments({ pipelineId, state: { $in: WAITING_JOB_STATES } }),
      ]);
      return { scheduledBuilds, runningBuilds, scheduledJobs, runningJobs, waitingJobs };
    },
  };
}
