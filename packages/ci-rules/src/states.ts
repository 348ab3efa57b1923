/** Build and job states as the REST API shows them (docs/compatibility.md#build-states, #job-states), shared by the builds service and the gateway. */

export const BUILD_STATES = [
  "scheduled",
  "running",
  "passed",
  "failing",
  "failed",
  "blocked",
  "canceling",
  "canceled",
  "skipped",
  "not_run",
] as const;
export type BuildState = (typeof BUILD_STATES)[number];

/** States after which a build never changes again (unless jobs are retried, which is not modelled yet). */
export const FINISHED_BUILD_STATES: readonly BuildState[] = ["passed", "failed", "canceled", "skipped", "not_run"];

export const JOB_STATES = [
  "pending",
  "waiting",
  "waiting_failed",
  "blocked",
  "blocked_failed",
  "unblocked",
  "unblocked_failed",
  "limiting",
  "limited",
  "scheduled",
  "assigned",
  "accepted",
  "running",
  "passed",
  "failed",
  "timing_out",
  "timed_out",
  "canceling",
  "canceled",
  "skipped",
  "broken",
  "expired",
] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States in which an agent holds the job (assigned to it, or running it). */
export const ACTIVE_JOB_STATES: readonly JobState[] = ["assigned", "accepted", "running", "canceling", "timing_out"];

/**
 * States in which the job's process is (or may be) running on an agent: stopping it needs the agent, and only in
 * these may an agent still write to the job (its log, header times, the meta-data, annotations and artifacts it makes).
 */
export const RUNNING_JOB_STATES: readonly JobState[] = ["accepted", "running", "canceling", "timing_out"];

/**
 * States a job never leaves (retries make a new job). `unblocked` is final for a manual job: unblocking is its
 * whole life, and the jobs behind it are what run next.
 */
export const FINISHED_JOB_STATES: readonly JobState[] = [
  "passed",
  "failed",
  "timed_out",
  "canceled",
  "skipped",
  "broken",
  "expired",
  "waiting_failed",
  "blocked_failed",
  "unblocked",
  "unblocked_failed",
];

/** Whether a job in `state` runs on an agent, which may still write to it (see RUNNING_JOB_STATES). */
export function isRunningJobState(state: string): boolean {
  return (RUNNING_JOB_STATES as readonly string[]).includes(state);
}
