/**
 * An in-memory BuildRepository for tests (the builds service in memory, testing.ts), kept to the contract the MongoDB
 * implementation follows: documents stored in the same form (build-docs.ts), the same unique keys and
 * compare-and-set matches, and lists in the same order. build-repository-contract.int.test.ts runs one set of cases
 * against both.
 */
import { jobOrder } from "../domain/job.js";
import { COUNTED_JOB_STATES, RUNNING_BUILD_STATES, SUPERSEDABLE_BUILD_STATES } from "../domain/state-sets.js";
import type { BuildState, JobState } from "../domain/types.js";
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
import type { BuildListFilter } from "./build-list-query.js";
import {
  type BuildRepository,
  type CreationClaim,
  DISPATCHABLE_JOB_FIELDS,
  type DispatchableJob,
  DuplicateBuildNumberError,
  DuplicateClaimError,
} from "./build-repository-contract.js";
import { asStored } from "./memory-document.js";
import { COUNTED_JOB_TYPES } from "./pipeline-counts.js";

/** The most unfinished jobs of one concurrency group the gate reads at once (as the MongoDB implementation). */
const MAX_GROUP_JOBS = 5000;

/** MongoDB's order of the values these documents sort on: null (or missing) first, then numbers, strings or dates. */
function compareValues(a: unknown, b: unknown): number {
  if (a === null || a === undefined) return b === null || b === undefined ? 0 : -1;
  if (b === null || b === undefined) return 1;
  const x = a instanceof Date ? a.getTime() : (a as number | string);
  const y = b instanceof Date ? b.getTime() : (b as number | string);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Sorts like MongoDB's `sort({ key: 1 | -1, … })`; documents equal on every key keep the order they were stored in. */
function sortedBy<T>(docs: readonly T[], keys: ReadonlyArray<readonly [(doc: T) => unknown, 1 | -1]>): T[] {
  return [...docs].sort((a, b) => {
    for (const [field, direction] of keys) {
      const order = compareValues(field(a), field(b));
      if (order !== 0) return order * direction;
    }
    return 0;
  });
}

/** A MongoDB duplicate key error as the driver raises it (code 11000, which isDuplicateKeyError recognizes). */
function duplicateKeyError(collection: string, key: string): Error {
  return Object.assign(new Error(`E11000 duplicate key error collection: ${collection} dup key: ${key}`), {
    code: 11000,
  });
}

/** Whether a stored build matches a list's filter: buildListQuery's filter (build-list-query.ts), evaluated here. */
function matchesList(doc: BuildDoc, f: BuildListFilter): boolean {
  if (f.organizationIds.length === 0 && !f.pipelineIds?.length) {
    // buildListQuery makes `$or: []` of it, which MongoDB refuses.
    throw new Error("a build list needs organizations or pipelines");
  }
  const inOrganizations = f.organizationIds.length > 0 && f.organizationIds.includes(doc.organizationId);
  const inPipelines = f.pipelineIds?.includes(doc.pipelineId) ?? false;
  if (!inOrganizations && !inPipelines) return false;
  if (f.pipelineId && doc.pipelineId !== f.pipelineId) return false;
  if (f.branches?.length && !f.branches.includes(doc.branch)) return false;
  if (f.commits?.length && !f.commits.includes(doc.commit)) return false;
  if (f.states?.length) {
    const plain: readonly BuildState[] = f.states.filter((state) => state !== "blocked");
    const byState = !doc.blocked && plain.includes(doc.state);
    if (!(byState || (f.states.includes("blocked") && doc.blocked))) return false;
  }
  if (f.creatorId && doc.creator?.id !== f.creatorId) return false;
  if (f.metaPairs?.length && !f.metaPairs.every((pair) => doc.metaPairs.includes(pair))) return false;
  if (f.createdFrom && doc.createdAt < f.createdFrom) return false;
  if (f.createdTo && !(doc.createdAt < f.createdTo)) return false;
  if (f.finishedFrom && !(doc.finishedAt && doc.finishedAt >= f.finishedFrom)) return false;
  return true;
}

/** The in-memory implementation. */
export function createMemoryBuildRepository(): BuildRepository {
  const builds = new Map<string, BuildDoc>();
  const jobs = new Map<string, JobDoc>();
  const counters = new Map<string, number>();
  const claims = new Map<string, ClaimDoc>();

  const buildOut = (doc: BuildDoc | undefined) => (doc ? fromBuildDoc(asStored(doc)) : null);
  const jobOut = (doc: JobDoc | undefined) => (doc ? fromJobDoc(asStored(doc)) : null);
  const claimOut = ({ _id, ...rest }: ClaimDoc): CreationClaim => asStored({ buildId: _id, ...rest });
  const allJobDocs = () => [...jobs.values()];
  const allBuildDocs = () => [...builds.values()];
  const storeJob = (doc: JobDoc) => {
    if (jobs.has(doc._id)) throw duplicateKeyError("jobs", doc._id);
    jobs.set(doc._id, asStored(doc));
  };

  return {
    async nextNumber(pipelineId, count = 1) {
      const seq = (counters.get(pipelineId) ?? 0) + count;
      counters.set(pipelineId, seq);
      return seq;
    },
    async raiseNumber(pipelineId, number) {
      counters.set(pipelineId, Math.max(counters.get(pipelineId) ?? number, number));
    },
    async insertBuild(b) {
      const doc = toBuildDoc(b);
      const taken = allBuildDocs().some((d) => d.pipelineId === doc.pipelineId && d.number === doc.number);
      if (taken || builds.has(doc._id)) {
        throw new DuplicateBuildNumberError(b.number, { cause: duplicateKeyError("builds", doc._id) });
      }
      builds.set(doc._id, asStored(doc));
    },
    async insertClaim({ buildId, ...rest }) {
      if (claims.has(buildId)) {
        throw new DuplicateClaimError(buildId, { cause: duplicateKeyError("build_claims", buildId) });
      }
      claims.set(buildId, asStored({ _id: buildId, ...rest }));
    },
    async findClaim(buildId) {
      const doc = claims.get(buildId);
      return doc ? claimOut(doc) : null;
    },
    async removeClaim(buildId) {
      claims.delete(buildId);
    },
    async claimsBefore(before, limit) {
      const due = [...claims.values()].filter((c) => c.createdAt < before);
      return sortedBy(due, [[(c) => c.createdAt, 1]])
        .slice(0, limit)
        .map(claimOut);
    },
    async deleteJobs(buildId, ids) {
      for (const id of ids) if (jobs.get(id)?.buildId === buildId) jobs.delete(id);
    },
    async insertJobs(list) {
      // Like an unordered insertMany: every new job is stored, then a duplicate id fails the call.
      let duplicate: Error | undefined;
      for (const doc of list.map(toJobDoc)) {
        try {
          storeJob(doc);
        } catch (err) {
          duplicate ??= err as Error;
        }
      }
      if (duplicate) throw duplicate;
    },
    async insertMissingJobs(list) {
      for (const doc of list.map(toJobDoc)) if (!jobs.has(doc._id)) storeJob(doc);
    },
    async deleteJob(id, state) {
      if (jobs.get(id)?.state !== state) return false;
      return jobs.delete(id);
    },
    async addDependencies(id, dependsOn) {
      const doc = jobs.get(id);
      if (!doc || !["pending", "waiting"].includes(doc.state)) return false;
      for (const dependency of dependsOn) if (!doc.dependsOn.includes(dependency)) doc.dependsOn.push(dependency);
      return true;
    },
    async setStepPositions(positions) {
      for (const { id, stepPosition } of positions) {
        const doc = jobs.get(id);
        if (doc) doc.stepIndex = stepPosition;
      }
    },
    async findBuild(pipelineId, number) {
      return buildOut(allBuildDocs().find((d) => d.pipelineId === pipelineId && d.number === number));
    },
    async findBuildById(id) {
      return buildOut(builds.get(id));
    },
    async findBuildWithJobs(pipelineId, number) {
      const found = buildOut(allBuildDocs().find((d) => d.pipelineId === pipelineId && d.number === number));
      if (!found) return null;
      const list = allJobDocs()
        .filter((d) => d.pipelineId === pipelineId && d.buildNumber === number && d.buildId === found.id)
        .map((d) => fromJobDoc(asStored(d)));
      return { build: found, jobs: list.sort(jobOrder) };
    },
    async listBuilds(f, skip, limit) {
      const matching = allBuildDocs().filter((d) => matchesList(d, f));
      const sorted = f.pipelineId
        ? sortedBy(matching, [[(d) => d.number, -1]])
        : sortedBy(matching, [
            [(d) => d.createdAt, -1],
            [(d) => d._id, -1],
          ]);
      return sorted.slice(skip, skip + limit).map((d) => fromBuildDoc(asStored(d)));
    },
    async jobsOf(buildIds) {
      const wanted = new Set(buildIds);
      const list = allJobDocs().filter((d) => wanted.has(d.buildId));
      return sortedBy(list, [
        [(d) => d.buildId, 1],
        [(d) => d.stepIndex, 1],
        [(d) => d.parallelGroupIndex, 1],
      ]).map((d) => fromJobDoc(asStored(d)));
    },
    async findJob(id) {
      return jobOut(jobs.get(id));
    },
    async findJobs(ids) {
      return ids.flatMap((id) => {
        const found = jobOut(jobs.get(id));
        return found ? [found] : [];
      });
    },
    async unfinishedOnBranch(pipelineId, branch, beforeNumber) {
      return allBuildDocs()
        .filter(
          (d) =>
            d.pipelineId === pipelineId &&
            d.branch === branch &&
            d.number < beforeNumber &&
            SUPERSEDABLE_BUILD_STATES.includes(d.state) &&
            d.finishedAt === null,
        )
        .map((d) => fromBuildDoc(asStored(d)));
    },
    async updateBuild(id, version, update) {
      const doc = builds.get(id);
      if (!doc || doc.version !== version) return null;
      const updated: BuildDoc = { ...doc, ...asStored(storedBuildUpdate(update)), version: version + 1 };
      builds.set(id, updated);
      return buildOut(updated);
    },
    async updateJob(id, from, update, guard) {
      const doc = jobs.get(id);
      if (!doc || doc.state !== from) return null;
      if (guard?.agentId && doc.agent?.id !== guard.agentId) return null;
      if (guard?.notRetried && doc.retried === true) return null;
      const updated: JobDoc = { ...doc, ...asStored(update) };
      jobs.set(id, updated);
      return jobOut(updated);
    },
    async updateJobs(changes, mark) {
      return changes.map(({ id, from, update, agentId }) => {
        const doc = jobs.get(id);
        if (!doc || doc.state !== from) return false;
        if (agentId && doc.agent?.id !== agentId) return false;
        const eventMarks = update.eventMarks ?? [...(doc.eventMarks ?? []), mark];
        jobs.set(id, { ...doc, ...asStored(update), eventMarks: [...eventMarks] });
        return true;
      });
    },
    async setHeaderTimes(id, times, guard) {
      const doc = jobs.get(id);
      // A job stored before the count was kept has none: it matches once, and holds the count from then on.
      const held = doc?.headerTimesHeld ?? null;
      if (!doc || !guard.states.includes(doc.state) || (held !== null && held !== guard.held)) return null;
      const updated: JobDoc = {
        ...doc,
        headerTimes: { ...doc.headerTimes, ...asStored(times) },
        headerTimesHeld: guard.total,
      };
      jobs.set(id, updated);
      return jobOut(updated);
    },
    async dispatchableJobs(limit) {
      const scheduled = allJobDocs().filter((d) => d.state === "scheduled" && d.type === "script");
      return sortedBy(scheduled, [
        [(d) => d.priority, -1],
        [(d) => d.runnableAt, 1],
      ])
        .slice(0, limit)
        .map((d): DispatchableJob => {
          const picked = Object.fromEntries(DISPATCHABLE_JOB_FIELDS.map((field) => [field, d[field]]));
          return asStored({ ...picked, id: d._id, clusterId: d.clusterId ?? null }) as DispatchableJob;
        });
    },
    async jobsDue(state, field, before, limit) {
      const due = allJobDocs().filter((d) => {
        const at = d[field];
        return d.state === state && at instanceof Date && at < before;
      });
      return sortedBy(due, [[(d) => d[field], 1]])
        .slice(0, limit)
        .map((d) => fromJobDoc(asStored(d)));
    },
    async groupJobs(organizationId, group, states) {
      return allJobDocs()
        .filter((d) => d.organizationId === organizationId && d.concurrencyGroup === group && states.includes(d.state))
        .slice(0, MAX_GROUP_JOBS)
        .map((d) => fromJobDoc(asStored(d)));
    },
    async limitedGroups(limit) {
      const groups = new Map<string, { organizationId: string; group: string }>();
      for (const d of allJobDocs()) {
        if (d.state !== "limited") continue;
        const group = d.concurrencyGroup as string;
        groups.set(JSON.stringify([d.organizationId, group]), { organizationId: d.organizationId, group });
      }
      return [...groups.values()].slice(0, limit);
    },
    async jobsOfType(type, states, limit) {
      return allJobDocs()
        .filter((d) => d.type === type && states.includes(d.state))
        .slice(0, limit)
        .map((d) => fromJobDoc(asStored(d)));
    },
    async staleAssignments(before, limit) {
      const stale = allJobDocs().filter(
        (d) => d.state === "assigned" && d.assignedAt instanceof Date && d.assignedAt < before,
      );
      return sortedBy(stale, [[(d) => d.assignedAt, 1]])
        .slice(0, limit)
        .map((d) => fromJobDoc(asStored(d)));
    },
    async countQueueJobs(organizationId, states, clusterId) {
      const counts = new Map<string, { queue: string; state: JobState; count: number }>();
      for (const d of allJobDocs()) {
        if (d.organizationId !== organizationId || !states.includes(d.state) || d.type !== "script") continue;
        if (clusterId && d.clusterId !== clusterId) continue;
        const queue = d.queue ?? "default";
        const key = JSON.stringify([queue, d.state]);
        const row = counts.get(key) ?? { queue, state: d.state, count: 0 };
        row.count++;
        counts.set(key, row);
      }
      return [...counts.values()];
    },
    async unfinishedCancels(limit) {
      return allBuildDocs()
        .filter((d) => d.finishedAt === null && d.cancelRequested)
        .slice(0, limit)
        .map(fromBuildDoc);
    },
    async activePipelines(since) {
      const ids = allBuildDocs()
        .filter((d) => d.finishedAt === null || d.finishedAt >= since)
        .map((d) => d.pipelineId);
      return [...new Set(ids)];
    },
    async pipelineCounts(pipelineId) {
      const countBuilds = (states: readonly string[]) =>
        allBuildDocs().filter((d) => d.pipelineId === pipelineId && states.includes(d.state)).length;
      const countJobs = (states: readonly JobState[]) =>
        allJobDocs().filter(
          (d) => d.pipelineId === pipelineId && states.includes(d.state) && COUNTED_JOB_TYPES.includes(d.type),
        ).length;
      return {
        scheduledBuilds: countBuilds(["scheduled"]),
        runningBuilds: countBuilds(RUNNING_BUILD_STATES),
        scheduledJobs: countJobs(COUNTED_JOB_STATES.scheduled),
        runningJobs: countJobs(COUNTED_JOB_STATES.running),
        waitingJobs: countJobs(COUNTED_JOB_STATES.waiting),
      };
    },
    async buildIdsOfPipeline(pipelineId, limit) {
      return allBuildDocs()
        .filter((d) => d.pipelineId === pipelineId)
        .slice(0, limit)
        .map((d) => d._id);
    },
    async removeBuilds(buildIds) {
      const removed = new Set(buildIds);
      for (const d of allJobDocs()) if (removed.has(d.buildId)) jobs.delete(d._id);
      for (const id of removed) builds.delete(id);
    },
    async forgetNumbering(pipelineId) {
      counters.delete(pipelineId);
    },
  };
}
