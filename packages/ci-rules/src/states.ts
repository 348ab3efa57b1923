/** Build and job states as the REST API shows them (buildkite-compat.md §B1, §B2), shared by the builds service and the gateway. */

export const BUILD_STATES = [
  "creating",
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
