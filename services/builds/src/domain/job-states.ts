/**
 * What a job's state says about it (docs/compatibility.md#job-states): finished, and finished well or badly, and what
 * canceling its build does to it. Shared by the state machine and the build state; the named sets are in
 * state-sets.ts.
 */
import { FINISHED_JOB_STATES } from "./state-sets.js";
import type { JobModel, JobState } from "./types.js";

/** Whether `state` is final. */
export function isFinishedJobState(state: JobState): boolean {
  return FINISHED_JOB_STATES.includes(state);
}

/**
 * Whether a finished job lets the jobs that depend on it go ahead: it passed, soft-failed, was unblocked, or never
 * ran because of the build's own definition or a newer build (broken, skipped).
 */
export function isFinishedOk(job: Pick<JobModel, "state" | "softFailed">): boolean {
  switch (job.state) {
    case "passed":
    case "broken":
    case "skipped":
    case "unblocked":
      return true;
    case "failed":
      return job.softFailed;
    default:
      return false;
  }
}

/**
 * Whether a finished job stops the jobs that depend on it (unless they allow dependency failure): a hard failure,
 * a timeout, a cancel, an expiry, or a job that was itself stopped by a failed dependency.
 */
export function isFinishedNotOk(job: Pick<JobModel, "state" | "softFailed">): boolean {
  return isFinishedJobState(job.state) && !isFinishedOk(job);
}

/**
 * Whether the job's own outcome fails the build: a failure that is not soft, a timeout, an expiry or a cancel.
 * `waiting_failed`, `blocked_failed` and `unblocked_failed` are not: the failure that caused them already counts.
 */
export function isHardFailure(job: Pick<JobModel, "state" | "softFailed">): boolean {
  switch (job.state) {
    case "failed":
      return !job.softFailed;
    case "timed_out":
    case "expired":
    case "canceled":
      return true;
    default:
      return false;
  }
}

/** Which jobs of a build to cancel: `cancel` go straight to canceled, `canceling` wait for their agent. */
export interface CancelPlan {
  cancel: string[];
  canceling: string[];
}

/**
 * What canceling a build does to each job (docs/compatibility.md#cancellation-and-timeouts): jobs no agent is running
 * (pending, waiting, scheduled, assigned, blocked, limiting, limited) are canceled at once; accepted and running jobs
 * become canceling until their agent finishes them. Finished jobs and jobs already canceling or timing out are left
 * alone.
 */
export function cancelPlan(jobs: readonly Pick<JobModel, "id" | "state" | "type">[]): CancelPlan {
  const plan: CancelPlan = { cancel: [], canceling: [] };
  for (const job of jobs) {
    switch (job.state) {
      case "pending":
      case "waiting":
      case "scheduled":
      case "assigned":
      case "blocked":
      case "limiting":
      case "limited":
        plan.cancel.push(job.id);
        break;
      case "accepted":
      case "running":
        // A trigger job's "run" is its child build, a build of its own that goes on: nothing to wait for.
        (job.type === "trigger" ? plan.cancel : plan.canceling).push(job.id);
        break;
      default:
        break;
    }
  }
  return plan;
}
