/**
 * A build's state, derived from its jobs (docs/compatibility.md#build-states). Deriving rather than storing transitions
 * keeps the build consistent with its jobs whatever order job events arrive in.
 */

import { cancelPlan, isFinishedJobState, isHardFailure } from "./job-states.js";
import { promisesHardFailure } from "./promised-failure.js";
import { BUILD_STARTED_JOB_STATES, PROGRESSING_JOB_STATES, RUNNING_JOB_STATES } from "./state-sets.js";
import type { DerivedBuildState, JobModel } from "./types.js";

/**
 * The build state for `jobs`, by the first rule that applies:
 *
 * 1. No jobs, or every job broken/skipped (every step omitted) → `not_run`, finished.
 * 2. Cancel requested: while a job still runs on an agent (accepted, running, canceling, timing_out), or a job the
 *    cancel has not reached yet is left (`cancelPlan` names it: a large build's cancel is written in batches,
 *    lifecycle/reconcile.ts) → `canceling`; otherwise → `canceled`, finished.
 * 3. A job is canceling (a single job's cancel) and none failed hard → `canceling` until its agent confirms (a failing
 *    build stays failing while a job of it stops).
 * 4. Every job finished → `failed` if any job failed hard (failed and not soft-failed, timed_out, expired, or
 *    canceled on its own), else `passed` (soft failures pass), finished.
 * 5. A block step (manual, not input) is `blocked` and no job is scheduled, on an agent or limited → `blocked: true`,
 *    and `state` is that step's `blockedState` (default passed) — except that after a hard failure a `passed` or
 *    `running` blocked state shows `failing`, since the build can no longer pass. Not finished: it can be unblocked.
 *    Input steps never block the build; the first blocked block step in job order decides.
 * 6. A hard failure happened and jobs remain → `failing`.
 * 7. Some job started (assigned or later, or a block step was unblocked; waiters passing do not count) → `running`.
 * 8. Otherwise (everything scheduled, waiting or pending, nothing taken by an agent yet) → `scheduled`.
 *
 * Jobs replaced by a retry are left out: their newer attempts decide.
 *
 * A build whose only unfinished job is an unanswered input step stays running (or scheduled/failing): it is not
 * blocked, and it is not over until the input is given or the build is canceled.
 */
export function deriveBuildState(all: readonly JobModel[], flags: { cancelRequested: boolean }): DerivedBuildState {
  // Retried attempts are history: their replacements decide.
  const jobs = all.filter((job) => !job.retried);
  if (jobs.every((job) => job.state === "broken" || job.state === "skipped")) {
    return { state: "not_run", blocked: false, finished: true };
  }
  if (flags.cancelRequested) {
    const plan = cancelPlan(jobs);
    return jobs.some((job) => RUNNING_JOB_STATES.includes(job.state)) || plan.cancel.length > 0
      ? { state: "canceling", blocked: false, finished: false }
      : { state: "canceled", blocked: false, finished: true };
  }
  // A running job's promised failure fails the build before it finishes (promised-failure.ts).
  const hardFailure = jobs.some(isHardFailure) || jobs.some(promisesHardFailure);
  // A failing build stays failing while a job of it stops (cancel_on_build_failing, a job's own cancel).
  if (!hardFailure && jobs.some((job) => job.state === "canceling"))
    return { state: "canceling", blocked: false, finished: false };
  if (jobs.every((job) => isFinishedJobState(job.state))) {
    return { state: hardFailure ? "failed" : "passed", blocked: false, finished: true };
  }
  const progressing = jobs.some((job) => PROGRESSING_JOB_STATES.includes(job.state));
  const block = jobs.find((job) => job.type === "manual" && !job.isInput && job.state === "blocked");
  if (block && !progressing) {
    const shown = block.blockedState ?? "passed";
    return { state: hardFailure && shown !== "failed" ? "failing" : shown, blocked: true, finished: false };
  }
  if (hardFailure) return { state: "failing", blocked: false, finished: false };
  const started = jobs.some((job) => job.type !== "waiter" && BUILD_STARTED_JOB_STATES.includes(job.state));
  return { state: started ? "running" : "scheduled", blocked: false, finished: false };
}
