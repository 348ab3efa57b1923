/**
 * The builds state machine in one import: job transitions, moving jobs past their dependencies, the build state
 * derived from its jobs and cancel plans. Each part lives in its own file; the state sets are in state-sets.ts.
 */
export { advance } from "./advance-jobs.js";
export { deriveBuildState } from "./build-state.js";
export { applyJobEvent, type JobEvent, type JobEventResult, softFailCovers } from "./job-events.js";
export {
  type CancelPlan,
  cancelPlan,
  isFinishedJobState,
  isFinishedNotOk,
  isFinishedOk,
  isHardFailure,
} from "./job-states.js";
