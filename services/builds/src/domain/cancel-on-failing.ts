/**
 * `cancel_on_build_failing: true` (docs/compatibility.md#pipeline-yaml): once the build is failing (a job of it failed
 * without soft_fail, timed out, expired or was canceled; retried attempts do not count), the jobs of such steps that
 * have not finished stop: those not yet on an agent are canceled, those on one go to `canceling` so the agent stops
 * them. Pure.
 */
import type { Job } from "./job.js";
import { type CancelPlan, cancelPlan, isHardFailure } from "./job-states.js";

export type CancelOnFailingJob = Pick<Job, "id" | "type" | "state" | "softFailed" | "retried" | "step">;

/** What to stop now: nothing unless the build is failing. */
export function cancelOnFailingPlan(all: readonly CancelOnFailingJob[]): CancelPlan {
  const current = all.filter((job) => !job.retried);
  if (!current.some(isHardFailure)) return { cancel: [], canceling: [] };
  return cancelPlan(current.filter((job) => job.step.type === "script" && job.step.cancel_on_build_failing === true));
}
