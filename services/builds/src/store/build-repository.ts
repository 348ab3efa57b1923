import { createGroupCommit, createInsertBatcher, isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db, Filter } from "mongodb";
import { jobOrder } from "../domain/job.js";
import { SUPERSEDABLE_BUILD_STATES } from "../domain/state-sets.js";
import type { JobState } from "../domain/types.js";
import {
  type BuildDoc,
  type ClaimDoc,
  fromBuildDoc,
  fromJobDoc,
  type JobDoc,
  storedBuildUpdate,
  toBuildDoc,
  toJobDoc,
} from "./build-docs.js";
import { ensureBuildIndexes } from "./build-indexes.js";
import { buildListQuery, mergeBuildPages, splitBuildList } from "./build-list-query.js";
import {
  type BuildRepository,
  type CreationClaim,
  DISPATCHABLE_JOB_FIELDS,
  DuplicateBuildNumberError,
  DuplicateClaimError,
  type JobUpdate,
} from "./build-repository-contract.js";
import { countPipeline } from "./pipeline-counts.js";

export * from "./build-repository-contract.js";

/** A scheduled job as dispatchableJobs reads it: only the fields of DispatchableJob. */
type DispatchableJobDoc = Pick<JobDoc, "_id" | (typeof DISPATCHABLE_JOB_FIELDS)[number]>;
const DISPATCHABLE_PROJECTION = Object.fromEntries(DISPATCHABLE_JOB_FIELDS.map((field) => [field, 1]));

/** The most job ids one statement of `updateJobs` names (an $in FerretDB checks against each document it finds). */
const UPDATE_GROUP = 200;

/** `list` in consecutive pieces of at most `size`. */
function chunks<T>(list: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

/** The most unfinished jobs of one concurrency group the gate reads at once. */
const MAX_GROUP_JOBS = 5000;

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoBuildRepository(db: Db): Promise<BuildRepository> {
  const builds: Collection<BuildDoc> = db.collection("builds");
  const jobs: Collection<JobDoc> = db.collection("jobs");
  const counters: Collection<{ _id: string; seq: number }> = db.collection("build_numbers");
  const claims: Collection<ClaimDoc> = db.collection("build_claims");
  await ensureBuildIndexes(builds, jobs, claims);

  const build = (doc: BuildDoc | null) => (doc ? fromBuildDoc(doc) : null);
  const job = (doc: JobDoc | null) => (doc ? fromJobDoc(doc) : null);
  // New builds and jobs created at the same time share one insert command each (group commit, insert-batcher.ts):
  // the bundled FerretDB spends about as long on one document as on ten.
  const newBuilds = createInsertBatcher<BuildDoc>((docs) => builds.insertMany(docs, { ordered: false }));
  const newJobs = createInsertBatcher<JobDoc>((docs) => jobs.insertMany(docs, { ordered: false }));
  // A creation's claim is stored before its jobs and removed once its build stands (build-creation.ts): both go
  // with what other creations do at the same time, and the removal is not waited for by the create.
  const newClaims = createInsertBatcher<ClaimDoc>((docs) => claims.insertMany(docs, { ordered: false }));
  const claimsDone = createGroupCommit<string>({
    send: (ids) => claims.deleteMany({ _id: { $in: ids } }),
  });
  const claim = ({ _id, ...rest }: ClaimDoc): CreationClaim => ({ buildId: _id, ...rest });

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
    async insertClaim({ buildId, ...rest }) {
      try {
        await newClaims.insert([{ _id: buildId, ...rest }]);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateClaimError(buildId, { cause: err });
        throw err;
      }
    },
    async findClaim(buildId) {
      const doc = await claims.findOne({ _id: buildId });
      return doc ? claim(doc) : null;
    },
    removeClaim: (buildId) => claimsDone.add(buildId),
    async claimsBefore(before, limit) {
      const docs = await claims
        .find({ createdAt: { $lt: before } })
        .sort({ createdAt: 1 })
        .limit(limit)
        .toArray();
      return docs.map(claim);
    },
    async deleteJobs(buildId, ids) {
      if (ids.length > 0) await jobs.deleteMany({ _id: { $in: [...ids] }, buildId });
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
    async setStepPositions(positions) {
      if (positions.length === 0) return;
      await jobs.bulkWrite(
        positions.map(({ id, stepPosition }) => ({
          updateOne: { filter: { _id: id }, update: { $set: { stepIndex: stepPosition } } },
        })),
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
      list.sort(jobOrder);
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
    async findJobs(ids) {
      if (ids.length === 0) return [];
      const docs = await jobs.find({ _id: { $in: [...ids] } }).toArray();
      return docs.map(fromJobDoc);
    },
    async unfinishedOnBranch(pipelineId, branch, beforeNumber) {
      const docs = await builds
        .find({
          pipelineId,
          branch,
          number: { $lt: beforeNumber },
          state: { $in: [...SUPERSEDABLE_BUILD_STATES] },
          finishedAt: null,
        })
        .toArray();
      return docs.map(fromBuildDoc);
    },
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
    async updateJobs(changes, mark) {
      // Jobs with the same change (state from and to, and the same stamps) are one statement per UPDATE_GROUP ids:
      // a statement's documents are written in a few transactions, each job alone would be one (and one WAL sync).
      const groups = new Map<string, { from: JobState; update: JobUpdate; agentId?: string; ids: string[] }>();
      for (const { id, from, update, agentId } of changes) {
        const key = JSON.stringify([from, agentId ?? null, update]);
        const group = groups.get(key) ?? { from, update, ...(agentId ? { agentId } : {}), ids: [] };
        group.ids.push(id);
        groups.set(key, group);
      }
      const statements = [...groups.values()].flatMap(({ from, update, agentId, ids }) =>
        chunks(ids, UPDATE_GROUP).map((part) => ({
          updateMany: {
            filter: { _id: { $in: part }, state: from, ...(agentId ? { "agent.id": agentId } : {}) },
            // Appended unless the update names them (the bundled FerretDB ignores $push's $slice): see the contract.
            update: update.eventMarks ? { $set: update } : { $set: update, $push: { eventMarks: mark } },
          },
        })),
      );
      if (statements.length === 0) return [];
      const result = await jobs.bulkWrite(statements, { ordered: false });
      if (result.modifiedCount === changes.length) return changes.map(() => true);
      // Some lost a race: a job was written when it bears the mark.
      const written = new Set<string>();
      for (const part of chunks(
        changes.map((c) => c.id),
        UPDATE_GROUP,
      )) {
        const docs = await jobs.find({ _id: { $in: part }, eventMarks: mark }, { projection: { _id: 1 } }).toArray();
        for (const d of docs) written.add(d._id);
      }
      return changes.map(({ id }) => written.has(id));
    },
    async setHeaderTimes(id, times, guard) {
      const set = Object.fromEntries(Object.entries(times).map(([line, at]) => [`headerTimes.${line}`, at]));
      // A job stored before the count was kept has none: it matches once, and holds the count from then on.
      const held = guard.held === 0 ? { $in: [0, null] } : { $in: [guard.held, null] };
      return job(
        await jobs.findOneAndUpdate(
          { _id: id, state: { $in: [...guard.states] }, headerTimesHeld: held },
          { $set: { ...set, headerTimesHeld: guard.total } },
          { returnDocument: "after" },
        ),
      );
    },
    async dispatchableJobs(limit) {
      const docs = await jobs
        .find({ state: "scheduled", type: "script" })
        .project<DispatchableJobDoc>(DISPATCHABLE_PROJECTION)
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
    async countQueueJobs(organizationId, states, clusterId) {
      const rows = await jobs
        .aggregate<{ _id: { queue: string | null; state: JobState }; count: number }>([
          {
            $match: {
              organizationId,
              ...(clusterId ? { clusterId } : {}),
              state: { $in: [...states] },
              type: "script",
            },
          },
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
    async unfinishedCancels(limit) {
      // Unfinished builds are read by the `finished` index (finishedAt null), a few among all.
      const docs = await builds.find({ finishedAt: null, cancelRequested: true }).limit(limit).toArray();
      return docs.map(fromBuildDoc);
    },
    async activePipelines(since) {
      const ids = await builds.distinct("pipelineId", { $or: [{ finishedAt: null }, { finishedAt: { $gte: since } }] });
      return ids.map(String);
    },
    pipelineCounts: (pipelineId) => countPipeline(builds, jobs, pipelineId),
  };
}

export type { BuildListFilter } from "./build-list-query.js";
