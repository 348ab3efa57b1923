/**
 * Promised failures (`buildkite-agent job promise-failure`, docs/compatibility.md#steps-from-inside-a-job): a running
 * job declares the failing exit status it will finish with, so that its build fails from then on. The promise is a
 * floor: a success is recorded as the promised status, and so is a soft failure when the promise was a hard one.
 * Pure.
 */
import { softFailCovers } from "./job-events.js";
import { isFinishedJobState } from "./job-states.js";
import type { JobModel } from "./types.js";

/** The exit statuses a promise may name. */
export const MIN_PROMISED_EXIT_STATUS = 1;
export const MAX_PROMISED_EXIT_STATUS = 255;
/** The longest reason kept with a promise (docs/limits.md). */
export const MAX_PROMISE_REASON = 1000;

type Promising = Pick<JobModel, "state" | "softFail" | "promisedExitStatus">;

/** Whether an unfinished job promised a failure its step's soft_fail does not cover: its build is failing. */
export function promisesHardFailure(job: Promising): boolean {
  const promised = job.promisedExitStatus;
  if (promised === undefined || promised === null || isFinishedJobState(job.state)) return false;
  return !softFailCovers(job.softFail, promised);
}

/** The exit status a finish records: the reported one, or the promised one where the promise is the floor. */
export function finishedExitStatus(job: Pick<JobModel, "softFail" | "promisedExitStatus">, reported: number): number {
  const promised = job.promisedExitStatus;
  if (promised === undefined || promised === null) return reported;
  if (reported === 0) return promised;
  const promisedHard = !softFailCovers(job.softFail, promised);
  if (promisedHard && softFailCovers(job.softFail, reported)) return promised;
  return reported;
}

/** What a new promise does: `new` is stored, `same` changes nothing again, `conflict` is refused. */
export function promiseOutcome(
  job: Pick<JobModel, "promisedExitStatus">,
  exitStatus: number,
): "new" | "same" | "conflict" {
  const promised = job.promisedExitStatus;
  if (promised === undefined || promised === null) return "new";
  return promised === exitStatus ? "same" : "conflict";
}
