import { createInsertBatcher, createUpdateBatcher, isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db, Filter } from "mongodb";
import {
  type BuildDoc,
  fromBuildDoc,
  fromJobDoc,
  type JobDoc,
  storedBuildUpdate,
  toBuildDoc,
  toJobDoc,
} from "./build-docs.js";
import { ensureBuildIndexes } from "./build-indexes.js";
import { type BuildListFilter, buildListQuery, mergeBuildPages, splitBuildList } from "./build-list.js";
import type { Build } from "./domain/build.js";
import type { Job } from "./domain/job.js";
import type { JobState } from "./domain/types.js";
import { countPipeline, type PipelineCounts } from "./pipeline-counts.js";

/** The fields of a build that a compare-and-set update may change. */
export type BuildUpdate = Partial<
  Pick<Build, "state" | "blocked" | "cancelRequested" | "cancelReason" | "startedAt" | "finishedAt" | "metaData">
>;

/** The fields of a job that a compare-and-set update may change. */
export type JobUpdate = Partial<
  Pick<
    Job,
    | "state"
    | "exitStatus"
    | "softFailed"
    | "agent"
    | "signal"
    | "signalReason"
    | "scheduledAt"
    | "runnableAt"
    | "assignedAt"
    | "startedAt"
    | "finishedAt"
    | "unblockedAt"
    | "timeoutInMinutes"
    | "retried"
    | "retriedInJobId"
    | "retryType"
    | "retriedBy"
    | "unblockedBy"
    | "deadlineAt"
    | "triggeredBuild"
    | "unblockFields"
  >
>;

/** What a new build's first state sets as it leaves `creating`. */
/** What dispatch matches an agent by: the fields of a scheduled job the agents service keeps as its hints. */
export type DispatchableJob = Pick<
  Job,
  "id" | "organizationId" | "clusterId" | "agentQueryRules" | "priority" | "runnableAt"
>;
type DispatchableJobDoc = Pick<
  JobDoc,
  "_id" | "organizationId" | "clusterId" | "agentQueryRules" | "priority" | "runnableAt"
>;
const DISPATCHABLE_FIELDS = { organizationId: 1, clusterId: 1, agentQueryRules: 1, priority: 1, runnableAt: 1 };

export type FirstState = Required<Pick<BuildUpdate, "state" | "blocked" | "finishedAt">>;

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

/** Unfinished jobs of one queue of an organization, by state. */
export interface QueueStateCount {
  queue: string;
  state: JobState;
  count: number;
}

/** Persistence of builds, jobs and per-pipeline build numbers. */
export interface BuildRepository {
  /**
   * Takes the next `count` build numbers of a pipeline (default 1) and returns the last: an atomic counter, so
   * numbers never repeat (gaps are possible).
   */
  nextNumber(pipelineId: string, count?: number): Promise<number>;
  /** Raises the counter to at least `number` (after another process took that number). */
  raiseNumber(pipelineId: string, number: number): Promise<void>;
  /** Inserts a build; a taken (pipeline, number) raises DuplicateBuildNumberError. */
  insertBuild(build: Build): Promise<void>;
  /** Up to `limit` ids of a pipeline's builds (any order): a deleted pipeline's builds are removed in batches. */
  buildIdsOfPipeline(pipelineId: string, limit: number): Promise<string[]>;
  /** Removes builds and their jobs, jobs first (a removal cut short is found again by its builds). */
  removeBuilds(buildIds: readonly string[]): Promise<void>;
  /** Forgets a deleted pipeline's build numbering. */
  forgetNumbering(pipelineId: string): Promise<void>;
  insertJobs(jobs: Job[]): Promise<void>;
  /** Inserts the jobs not stored yet (a replayed pipeline upload stores the rest of its jobs). */
  insertMissingJobs(jobs: Job[]): Promise<void>;
  /** Deletes a job that is still in `state`; false when it moved on. */
  deleteJob(id: string, state: JobState): Promise<boolean>;
  /** Adds dependencies to a job that has not been scheduled yet (pending or waiting); false when it was. */
  addDependencies(id: string, dependsOn: readonly string[]): Promise<boolean>;
  /** Moves jobs to new positions in their build's order. */
  setStepIndexes(positions: ReadonlyArray<{ id: string; stepIndex: number }>): Promise<void>;
  findBuild(pipelineId: string, number: number): Promise<Build | null>;
  /** A build and its jobs, read at once (both by pipeline and number): one round trip for a build's answer. */
  findBuildWithJobs(pipelineId: string, number: number): Promise<{ build: Build; jobs: Job[] } | null>;
  findBuildById(id: string): Promise<Build | null>;
  listBuilds(filter: BuildListFilter, skip: number, limit: number): Promise<Build[]>;
  jobsOf(buildIds: readonly string[]): Promise<Job[]>;
  findJob(id: string): Promise<Job | null>;
  /** Builds still `creating` that were created before `before`, oldest first (creations cut off). */
  creatingBefore(before: Date, limit: number): Promise<Build[]>;
  /** Unfinished builds of a branch, for the skip/cancel intermediate rules. */
  unfinishedOnBranch(pipelineId: string, branch: string, beforeNumber: number): Promise<Build[]>;
  /**
   * Moves a new build out of `creating` (CREATING_VERSION) into its first state (FIRST_STATE_VERSION); false when it
   * had moved on (creation repair took it). Creates at the same time going to the same state share one command.
   */
  leaveCreating(build: Pick<Build, "id" | "pipelineId" | "organizationId">, first: FirstState): Promise<boolean>;
  /** Updates a build only if its version is still `version`; returns the updated build or null. */
  updateBuild(id: string, version: number, update: BuildUpdate): Promise<Build | null>;
  /**
   * Compare-and-set on a job's state (and, with a guard, on its agent, or on its not being retried yet): the job
   * after the update, or null when it did not match.
   */
  updateJob(
    id: string,
    from: JobState,
    update: JobUpdate,
    guard?: { agentId?: string; notRetried?: boolean },
  ): Promise<Job | null>;
  /** Merges section header times into a job's. */
  setHeaderTimes(id: string, times: Record<string, string>): Promise<Job | null>;
  /**
   * Scheduled agent jobs, highest priority then longest runnable first: only what dispatch matches agents by (the
   * agents service reads up to a thousand of them every few seconds).
   */
  dispatchableJobs(limit: number): Promise<DispatchableJob[]>;
  /** Jobs in `state` whose `field` time is before `before`, oldest first (the sweepers' work). */
  jobsDue(state: JobState, field: "deadlineAt" | "runnableAt", before: Date, limit: number): Promise<Job[]>;
  /** An organization's jobs of a concurrency group in some states. */
  groupJobs(organizationId: string, group: string, states: readonly JobState[]): Promise<Job[]>;
  /** Concurrency groups with jobs waiting for a slot (`limited`), at most `limit` of them. */
  limitedGroups(limit: number): Promise<Array<{ organizationId: string; group: string }>>;
  /** Jobs of a type in some states (the trigger sweep's work). */
  jobsOfType(type: Job["type"], states: readonly JobState[], limit: number): Promise<Job[]>;
  /** Jobs assigned to an agent before `before` that it never accepted. */
  staleAssignments(before: Date, limit: number): Promise<Job[]>;
  /** Unfinished agent jobs of an organization, counted by queue and state. */
  countQueueJobs(organizationId: string, states: readonly JobState[]): Promise<QueueStateCount[]>;
  /** Pipelines with unfinished builds, or builds finished since `since`: those whose counters may be stale. */
  activePipelines(since: Date): Promise<string[]>;
  /** Live counters of a pipeline. */
  pipelineCounts(pipelineId: string): Promise<PipelineCounts>;
}

/** The version a new build is stored with, in state `creating`, and the one its first state gets (leaveCreating). */
export const CREATING_VERSION = 1;
export const FIRST_STATE_VERSION = CREATING_VERSION + 1;

/** The most unfinished jobs of one concurrency group the gate reads at once. */
const MAX_GROUP_JOBS = 5000;

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoBuildRepository(db: Db): Promise<BuildRepository> {
  const builds: Collection<BuildDoc> = db.collection("builds");
  const jobs: Collection<JobDoc> = db.collection("jobs");
  const counters: Collection<{ _id: string; seq: number }> = db.collection("build_numbers");
  await ensureBuildIndexes(builds, jobs);

  const build = (doc: BuildDoc | null) => (doc ? fromBuildDoc(doc) : null);
  const job = (doc: JobDoc | null) => (doc ? fromJobDoc(doc) : null);
  // New builds and jobs created at the same time share one insert command each (group commit, insert-batcher.ts):
  // the bundled FerretDB spends about as long on one document as on ten.
  const newBuilds = createInsertBatcher<BuildDoc>((docs) => builds.insertMany(docs, { ordered: false }));
  const newJobs = createInsertBatcher<JobDoc>((docs) => jobs.insertMany(docs, { ordered: false }));
  // Their first states too, one updateMany per distinct state (update-batcher.ts): a findAndModify each cost the
  // bundled FerretDB about twice as much per build.
  const firstStates = createUpdateBatcher<FirstState>({
    keyOf: (first) => JSON.stringify(first),
    async updateMany(ids, first) {
      const filter = { _id: { $in: ids }, state: "creating" as const, version: CREATING_VERSION };
      return (await builds.updateMany(filter, { $set: { ...first, version: FIRST_STATE_VERSION } })).matchedCount;
    },
    async holding(ids, first) {
      const docs = await builds
        .find({ _id: { $in: ids } }, { projection: { state: 1, blocked: 1, finishedAt: 1, version: 1 } })
        .toArray();
      const held = (d: (typeof docs)[number]) =>
        d.version === FIRST_STATE_VERSION &&
        d.state === first.state &&
        d.blocked === first.blocked &&
        (d.finishedAt?.getTime() ?? null) === (first.finishedAt?.getTime() ?? null);
      return new Set(docs.filter(held).map((d) => d._id));
    },
  });

  return {
    async nextNumber(pipelineId, count = 1) {
      // Two first builds of a pipeline may both try to insert its counter; the loser's upsert fails on the
      // unique _id and simply increments the counter the winner created.
      for (let attempt = 0; ; attempt++) {
        try {
          const doc = await counters.findOneAndUpdate(
            { _id: pipelineId },
            { $inc: { seq: count } },
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
    async insertBuild(b) {
      try {
        await newBuilds.insert([toBuildDoc(b)]);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateBuildNumberError(b.number, { cause: err });
        throw err;
      }
    },
    async insertJobs(list) {
      await newJobs.insert(list.map(toJobDoc));
    },
    async insertMissingJobs(list) {
      if (list.length === 0) return;
      const stored = new Set(
        (await jobs.find({ _id: { $in: list.map((j) => j.id) } }, { projection: { _id: 1 } }).toArray()).map(
          (d) => d._id,
        ),
      );
      const missing = list.filter((j) => !stored.has(j.id));
      if (missing.length > 0) await jobs.insertMany(missing.map(toJobDoc));
    },
    deleteJob: async (id, state) => (await jobs.deleteOne({ _id: id, state })).deletedCount === 1,
    addDependencies: async (id, dependsOn) =>
      (
        await jobs.updateOne(
          { _id: id, state: { $in: ["pending", "waiting"] } },
          { $addToSet: { dependsOn: { $each: [...dependsOn] } } },
        )
      ).matchedCount === 1,
    async setStepIndexes(positions) {
      if (positions.length === 0) return;
      await jobs.bulkWrite(
        positions.map(({ id, stepIndex }) => ({ updateOne: { filter: { _id: id }, update: { $set: { stepIndex } } } })),
      );
    },
    findBuild: async (pipelineId, number) => build(await builds.findOne({ pipelineId, number })),
    findBuildById: async (id) => build(await builds.findOne({ _id: id })),
    async findBuildWithJobs(pipelineId, number) {
      const [doc, jobDocs] = await Promise.all([
        builds.findOne({ pipelineId, number }),
        // A build's few jobs are put in order here: an unsorted read is one index search and nothing more.
        jobs.find({ pipelineId, buildNumber: number }).toArray(),
      ]);
      if (!doc) return null;
      const found = fromBuildDoc(doc);
      const list = jobDocs.map(fromJobDoc).filter((j) => j.buildId === found.id);
      list.sort(
        (a, b) =>
          a.stepIndex - b.stepIndex ||
          (a.parallelGroupIndex ?? -1) - (b.parallelGroupIndex ?? -1) ||
          a.createdAt.getTime() - b.createdAt.getTime(),
      );
      return { build: found, jobs: list };
    },
    async listBuilds(f, skip, limit) {
      const parts = splitBuildList(f);
      if (parts.length === 1) {
        const { filter, sort } = buildListQuery(f);
        const docs = await builds
          .find(filter as Filter<BuildDoc>)
          .sort(sort)
          .skip(skip)
          .limit(limit)
          .toArray();
        return docs.map(fromBuildDoc);
      }
      const pages = await Promise.all(
        parts.map((part) => {
          const { filter, sort } = buildListQuery(part);
          return builds
            .find(filter as Filter<BuildDoc>)
            .sort(sort)
            .limit(skip + limit)
            .toArray();
        }),
      );
      return mergeBuildPages(pages, skip, limit).map(fromBuildDoc);
    },
    async jobsOf(buildIds) {
      if (buildIds.length === 0) return [];
      const docs = await jobs
        .find({ buildId: { $in: [...buildIds] } })
        .sort({ buildId: 1, stepIndex: 1, parallelGroupIndex: 1 })
        .toArray();
      return docs.map(fromJobDoc);
    },
    findJob: async (id) => job(await jobs.findOne({ _id: id })),
    async creatingBefore(before, limit) {
      const docs = await builds
        .find({ state: "creating", createdAt: { $lt: before } })
        .sort({ state: 1, createdAt: 1 })
        .limit(limit)
        .toArray();
      return docs.map(fromBuildDoc);
    },
    async unfinishedOnBranch(pipelineId, branch, beforeNumber) {
      const docs = await builds
        .find({
          pipelineId,
          branch,
          number: { $lt: beforeNumber },
          state: { $in: ["scheduled", "running", "failing", "blocked", "passed"] },
          finishedAt: null,
        })
        .toArray();
      return docs.map(fromBuildDoc);
    },
    leaveCreating: (b, first) => firstStates.update(b.id, first),
    updateBuild: async (id, version, update) =>
      build(
        await builds.findOneAndUpdate(
          { _id: id, version },
          { $set: { ...storedBuildUpdate(update), version: version + 1 } },
          { returnDocument: "after" },
        ),
      ),
    updateJob: async (id, from, update, guard) =>
      job(
        await jobs.findOneAndUpdate(
          {
            _id: id,
            state: from,
            ...(guard?.agentId ? { "agent.id": guard.agentId } : {}),
            ...(guard?.notRetried ? { retried: { $ne: true } } : {}),
          },
          { $set: update },
          { returnDocument: "after" },
        ),
      ),
    async setHeaderTimes(id, times) {
      const set = Object.fromEntries(Object.entries(times).map(([line, at]) => [`headerTimes.${line}`, at]));
      return job(await jobs.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: "after" }));
    },
    async dispatchableJobs(limit) {
      const docs = await jobs
        .find({ state: "scheduled", type: "script" })
        .project<DispatchableJobDoc>(DISPATCHABLE_FIELDS)
        .sort({ state: 1, priority: -1, runnableAt: 1 })
        .limit(limit)
        .toArray();
      return docs.map(({ _id, clusterId, ...rest }) => ({ ...rest, id: _id, clusterId: clusterId ?? null }));
    },
    async jobsDue(state, field, before, limit) {
      const docs = await jobs
        .find({ state, [field]: { $lt: before } })
        .sort({ state: 1, [field]: 1 })
        .limit(limit)
        .toArray();
      return docs.map(fromJobDoc);
    },
    async groupJobs(organizationId, group, states) {
      const docs = await jobs
        .find({ organizationId, concurrencyGroup: group, state: { $in: [...states] } })
        .limit(MAX_GROUP_JOBS)
        .toArray();
      return docs.map(fromJobDoc);
    },
    async limitedGroups(limit) {
      const rows = await jobs
        .aggregate<{ _id: { organizationId: string; group: string } }>([
          { $match: { state: "limited" } },
          { $group: { _id: { organizationId: "$organizationId", group: "$concurrencyGroup" } } },
          { $limit: limit },
        ])
        .toArray();
      return rows.map((r) => r._id);
    },
    async jobsOfType(type, states, limit) {
      const docs = await jobs
        .find({ type, state: { $in: [...states] } })
        .limit(limit)
        .toArray();
      return docs.map(fromJobDoc);
    },
    async staleAssignments(before, limit) {
      const docs = await jobs
        .find({ state: "assigned", assignedAt: { $lt: before } })
        .sort({ state: 1, assignedAt: 1 })
        .limit(limit)
        .toArray();
      return docs.map(fromJobDoc);
    },
    async countQueueJobs(organizationId, states) {
      const rows = await jobs
        .aggregate<{ _id: { queue: string | null; state: JobState }; count: number }>([
          { $match: { organizationId, state: { $in: [...states] }, type: "script" } },
          { $group: { _id: { queue: "$queue", state: "$state" }, count: { $sum: 1 } } },
        ])
        .toArray();
      return rows.map((r) => ({ queue: r._id.queue ?? "default", state: r._id.state, count: r.count }));
    },
    async buildIdsOfPipeline(pipelineId, limit) {
      const docs = await builds
        .find({ pipelineId }, { projection: { _id: 1 } })
        .limit(limit)
        .toArray();
      return docs.map((d) => d._id);
    },
    async removeBuilds(buildIds) {
      if (buildIds.length === 0) return;
      await jobs.deleteMany({ buildId: { $in: [...buildIds] } });
      await builds.deleteMany({ _id: { $in: [...buildIds] } });
    },
    async forgetNumbering(pipelineId) {
      await counters.deleteOne({ _id: pipelineId });
    },
    async activePipelines(since) {
      const ids = await builds.distinct("pipelineId", { $or: [{ finishedAt: null }, { finishedAt: { $gte: since } }] });
      return ids.map(String);
    },
    pipelineCounts: (pipelineId) => countPipeline(builds, jobs, pipelineId),
  };
}

export type { BuildListFilter } from "./build-list.js";
