/**
 * Moves jobs forward once their dependencies allow it (docs/compatibility.md#job-states: pending → waiting → scheduled,
 * pending → blocked, waiting → waiting_failed). Called after jobs are planned and after every job event.
 */
import { isFinishedNotOk, isFinishedOk } from "./job-states.js";
import type { JobModel, JobState } from "./types.js";

/**
 * Returns the jobs with every `pending`/`waiting` job moved as far as its dependencies allow, repeated until
 * nothing changes (a waiter passing can release the jobs behind it in the same call). Unchanged jobs are the same
 * objects; the input is not modified.
 *
 * For a pending or waiting job:
 * - if a dependency finished not-ok (hard failure, timeout, cancel, expiry, or itself waiting_failed /
 *   blocked_failed) and the job does not allow that failure, it becomes `waiting_failed` (manual jobs:
 *   `blocked_failed`) at once, even while other dependencies still run, so the failure travels down the build.
 *   A failure is allowed by `allowDependencyFailure`, by `allowFailureOf` naming that dependency, or by a waiter's
 *   `continueOnFailure`;
 * - else if every dependency finished ok (passed, soft-failed, unblocked, broken, skipped) or allowed-not-ok,
 *   script and trigger jobs become `scheduled` (`limited` in a concurrency group: the gate schedules them), manual
 *   jobs `blocked`, and waiters `passed` (B2: a finished waiter always shows passed);
 * - else a pending job becomes `waiting`.
 *
 * A dependency that was retried is its latest attempt (`retriedInJobId`, followed). Dependency ids that are not in
 * `jobs` are ignored rather than waited for forever. Jobs in other states,
 * including `limiting`/`limited` (concurrency groups, the caller's business), are left alone.
 */
export function advance<T extends JobModel>(jobs: readonly T[]): T[] {
  const result = [...jobs];
  const indexById = new Map(result.map((job, index) => [job.id, index]));
  // A dependency that was retried stands for its latest attempt.
  const lookup = (id: string): T | undefined => {
    let job: T | undefined;
    let next: string | null | undefined = id;
    for (let hops = 0; next && hops <= result.length; hops++) {
      const index = indexById.get(next);
      job = index === undefined ? undefined : result[index];
      next = job?.retried ? job.retriedInJobId : undefined;
    }
    return job;
  };
  let changed = true;
  while (changed) {
    changed = false;
    result.forEach((job, index) => {
      if (job.retried || (job.state !== "pending" && job.state !== "waiting")) return;
      const next = nextState(job, lookup);
      if (next !== job.state) {
        result[index] = { ...job, state: next };
        changed = true;
      }
    });
  }
  return result;
}

function nextState(job: JobModel, lookup: (id: string) => JobModel | undefined): JobState {
  let unfinished = false;
  for (const id of job.dependsOn) {
    const dependency = lookup(id);
    if (dependency === undefined || isFinishedOk(dependency)) continue;
    if (isFinishedNotOk(dependency)) {
      if (failureAllowed(job, id)) continue;
      return job.type === "manual" ? "blocked_failed" : "waiting_failed";
    }
    unfinished = true;
  }
  if (unfinished) return "waiting";
  switch (job.type) {
    case "script":
    case "trigger":
      return job.concurrencyGroup && job.concurrency ? "limited" : "scheduled";
    case "manual":
      return "blocked";
    case "waiter":
      return "passed";
  }
}

function failureAllowed(job: JobModel, dependencyId: string): boolean {
  if (job.allowDependencyFailure) return true;
  if (job.type === "waiter" && job.continueOnFailure) return true;
  return job.allowFailureOf?.includes(dependencyId) ?? false;
}
