import type { Collection } from "mongodb";
import { COUNTED_JOB_STATES, RUNNING_BUILD_STATES } from "../domain/state-sets.js";
import type { JobState, JobType } from "../domain/types.js";
import type { BuildDoc, JobDoc } from "./build-docs.js";

/** Waiter jobs are bookkeeping that never runs anywhere: the counters leave them out. */
export const COUNTED_JOB_TYPES: JobType[] = ["script", "manual", "trigger"];

/** A pipeline's live counters, as the pipelines service shows them. */
export interface PipelineCounts {
  scheduledBuilds: number;
  runningBuilds: number;
  scheduledJobs: number;
  runningJobs: number;
  waitingJobs: number;
}

/** Counts a pipeline's scheduled and running builds and its scheduled, running and waiting jobs (waiters aside). */
export async function countPipeline(
  builds: Collection<BuildDoc>,
  jobs: Collection<JobDoc>,
  pipelineId: string,
): Promise<PipelineCounts> {
  // One count command per counter, each answered from the (pipelineId, state) index: by MongoDB, and by the
  // bundled FerretDB in SQL (count-pushdown.patch). An aggregation over the states would read every unfinished
  // build and job of the pipeline, thousands when agents fall behind, on every recount.
  // Jobs are counted by type too, from the (pipelineId, state, type) index: the filter stays one the bundled FerretDB
  // counts in SQL (top-level string $in's).
  const count = (collection: Collection<BuildDoc> | Collection<JobDoc>, filter: Record<string, unknown>) =>
    // The count command, not countDocuments (an aggregation): exact with a filter on a standalone server or a
    // replica set, which is what the service runs on.
    (collection as unknown as Collection).count({ pipelineId, ...filter });
  const countJobs = (states: readonly JobState[]) =>
    count(jobs, { state: { $in: [...states] }, type: { $in: COUNTED_JOB_TYPES } });
  const [scheduledBuilds, runningBuilds, scheduledJobs, runningJobs, waitingJobs] = await Promise.all([
    count(builds, { state: { $in: ["scheduled"] } }),
    count(builds, { state: { $in: RUNNING_BUILD_STATES } }),
    countJobs(COUNTED_JOB_STATES.scheduled),
    countJobs(COUNTED_JOB_STATES.running),
    countJobs(COUNTED_JOB_STATES.waiting),
  ]);
  return { scheduledBuilds, runningBuilds, scheduledJobs, runningJobs, waitingJobs };
}
