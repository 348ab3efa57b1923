/**
 * The builds state machine in one import: job transitions, moving jobs past their dependencies, the build state
 * derived from its jobs, cancel plans and the pipeline's job counters. Each part lives in its own file.
 */
export { advance } from "./advance-jobs.js";
export { deriveBuildState } from "./build-state.js";
export { applyJobEvent, type JobEvent, type JobEventResult, softFailCovers } from "./job-events.js";
export {
  ACTIVE_JOB_STATES,
  type CancelPlan,
  cancelPlan,
  FINISHED_JOB_STATES,
  isActiveJobState,
  isFinishedJobState,
  isFinishedNotOk,
  isFinishedOk,
  isHardFailure,
  type JobCounts,
  jobCounts,
  RUNNING_JOB_STATES,
} from "./job-states.js";
