import type { Collection } from "mongodb";
import type { BuildDoc, ClaimDoc, JobDoc } from "./build-docs.js";

/**
 * The indexes of the builds and jobs collections: what each list, dispatch query, sweeper and repair reads by.
 * Each index costs every write of a document (12 entries per build on the bundled FerretDB), so one is added only
 * for a query that would otherwise scan.
 */

/**
 * Indexes an earlier version made that nothing reads by any more, dropped at start (a no-op once gone): every index
 * costs each write of its collection. Builds: "org_finished" (organization, finishedAt) served finished_from by
 * sorting every match, which org_newest_first serves in order; "state_age" (state, createdAt) served the repair of
 * builds an earlier version left `creating`, which no build is any more. Jobs: "pipeline_job_state" (pipelineId,
 * state), replaced by pipeline_job_counts, which counts by type too.
 */
const RETIRED_INDEXES = { builds: ["org_finished", "state_age"], jobs: ["pipeline_job_state"] } as const;

/** Creates the indexes (a no-op for those that exist) and drops the retired ones. */
export async function ensureBuildIndexes(
  builds: Collection<BuildDoc>,
  jobs: Collection<JobDoc>,
  claims: Collection<ClaimDoc>,
): Promise<void> {
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
    // activePipelines: unfinished (finishedAt null) and recently finished builds, once per process start
    builds.createIndex({ finishedAt: -1 }, { name: "finished" }),
    // The creation repair: claims by age.
    claims.createIndex({ createdAt: 1 }, { name: "claim_age" }),
    jobs.createIndex({ buildId: 1, stepIndex: 1, parallelGroupIndex: 1 }, { name: "build_jobs" }),
    // A build's answer reads its jobs by pipeline and number, beside the build, in the same round trip.
    jobs.createIndex({ pipelineId: 1, buildNumber: 1, stepIndex: 1 }, { name: "pipeline_build_jobs" }),
    // A pipeline's counters: its jobs by state and type (waiters are not counted), counted from this index.
    jobs.createIndex({ pipelineId: 1, state: 1, type: 1 }, { name: "pipeline_job_counts" }),
    // Dispatch: scheduled jobs by priority, then how long they have been runnable; stale assignments by age.
    jobs.createIndex({ state: 1, priority: -1, runnableAt: 1 }, { name: "dispatch" }),
    jobs.createIndex({ state: 1, assignedAt: 1 }, { name: "assigned_age" }),
    // Sweepers: running jobs past their deadline, scheduled jobs waiting too long.
    jobs.createIndex({ state: 1, deadlineAt: 1 }, { name: "deadlines" }),
    jobs.createIndex({ state: 1, runnableAt: 1 }, { name: "scheduled_age" }),
    jobs.createIndex({ type: 1, state: 1 }, { name: "type_state" }),
    // Concurrency groups: a group's unfinished jobs across the organization.
    jobs.createIndex({ organizationId: 1, concurrencyGroup: 1, state: 1 }, { name: "concurrency_group" }),
    // Metrics: an organization's unfinished jobs.
    jobs.createIndex({ organizationId: 1, state: 1 }, { name: "org_job_state" }),
  ]);
  await dropRetired(builds, RETIRED_INDEXES.builds);
  await dropRetired(jobs, RETIRED_INDEXES.jobs);
}

async function dropRetired(collection: Collection<BuildDoc> | Collection<JobDoc>, retired: readonly string[]) {
  const existing = new Set((await collection.listIndexes().toArray()).map((index) => String(index.name)));
  for (const name of retired) {
    if (!existing.has(name)) continue;
    try {
      await collection.dropIndex(name);
    } catch (err) {
      // Replicas starting together each find the index and drop it: the one that comes second is told it is gone
      // (IndexNotFound, code 27), which is what it wanted. Anything else is a real failure.
      if ((err as { code?: number }).code !== INDEX_NOT_FOUND) throw err;
    }
  }
}

/** MongoDB's (and FerretDB's) error code for dropping an index that does not exist. */
const INDEX_NOT_FOUND = 27;
