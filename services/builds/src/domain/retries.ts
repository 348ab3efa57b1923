/**
 * Job retries (docs/compatibility.md#job-states, #pipeline-yaml). A retry never changes the finished job: it is marked
 * `retried` and a new attempt of the same step takes its place, for the build's state and for the jobs that depend
 * on it. Pure.
 */
import type { AutomaticRetryRule } from "@conveyor/ci-rules";
import type { UserSnapshot } from "./build.js";
import type { Job } from "./job.js";
import { RETRYABLE_JOB_STATES } from "./state-sets.js";

export type RetryType = "automatic" | "manual";

/** Buildkite's cap on a rule's `limit`. */
export const MAX_AUTOMATIC_RETRIES = 10;

/** How many automatic retries led to this attempt: the automatic links of its chain of retry sources. */
export function automaticRetriesBefore(job: Pick<Job, "retrySource">, jobs: readonly Job[]): number {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  let count = 0;
  let source = job.retrySource;
  for (let hops = 0; source && hops <= jobs.length; hops++) {
    if (source.retryType === "automatic") count++;
    source = byId.get(source.jobId)?.retrySource ?? null;
  }
  return count;
}

/** Whether a rule's value (`*`, a specific value, or `none` for "no value") covers what the job ended with. */
function covers(rule: string | undefined, actual: string | null): boolean {
  if (rule === undefined || rule === "*") return true;
  if (rule === "none") return actual === null || actual === "";
  return rule.toLowerCase() === (actual ?? "").toLowerCase();
}

/**
 * The automatic retry rule that applies to a job that just finished, or null. The first rule matching the exit
 * status (`*` is any status from 1 to 255; -1, an agent lost, only when listed), the signal and the signal reason
 * decides; it applies while the job's chain has had fewer automatic retries than the rule's limit (at most 10).
 * Passed, soft-failed and canceled jobs are never retried automatically.
 */
export function automaticRetryRule(job: Job, jobs: readonly Job[]): AutomaticRetryRule | null {
  if (job.retried || job.type !== "script" || job.softFailed) return null;
  if (job.state !== "failed" && job.state !== "timed_out") return null;
  const rules = job.step.type === "script" ? (job.step.retry?.automatic ?? []) : [];
  const exit = job.exitStatus;
  const rule = rules.find(
    (r) =>
      (r.exit_status === "*"
        ? exit !== null && exit >= 1 && exit <= 255
        : exit !== null && r.exit_status.includes(exit)) &&
      covers(r.signal, job.signal) &&
      covers(r.signal_reason, job.signalReason),
  );
  if (!rule) return null;
  return automaticRetriesBefore(job, jobs) < Math.min(rule.limit, MAX_AUTOMATIC_RETRIES) ? rule : null;
}

/**
 * Why a job may not be retried by hand, in Buildkite's words, or null when it may: finished failed, timed out,
 * canceled or expired (passed only when the step permits it), not retried already, and the step allows manual
 * retries.
 */
export function manualRetryProblem(job: Job): string | null {
  if (job.type !== "script") return "Only command jobs can be retried";
  if (job.retried) return "This job has already been retried";
  const manual = job.step.type === "script" ? job.step.retry?.manual : undefined;
  if (manual && !manual.allowed) return manual.reason || "This job can't be retried";
  if (job.state === "passed" && manual?.permit_on_passed) return null;
  if (!RETRYABLE_JOB_STATES.includes(job.state)) return "Only failed, timed out or canceled jobs can be retried";
  return null;
}

/** What retrying a job changes: the finished attempt, and the new one. */
export interface Retry {
  /** Fields the finished attempt gains. */
  retried: Pick<Job, "retried" | "retriedInJobId" | "retryType" | "retriedBy">;
  attempt: Job;
}

/**
 * The new attempt of a job: the same step, dependencies and definition, `pending` (so the build's dependencies
 * decide whether it can run at once), with nothing of the old attempt's run.
 */
export function retryOf(
  job: Job,
  opts: { id: string; type: RetryType; at: Date; retriedBy: UserSnapshot | null },
): Retry {
  const attempt: Job = {
    ...job,
    id: opts.id,
    state: "pending",
    exitStatus: null,
    softFailed: false,
    brokenReason: null,
    retried: false,
    retriedInJobId: null,
    retriesCount: job.retriesCount + 1,
    // Buildkite shows a retry's type on the attempt it made (REST `retry_type`), as well as on the one it replaced.
    retryType: opts.type,
    retrySource: { jobId: job.id, retryType: opts.type },
    retriedBy: null,
    agent: null,
    signal: null,
    signalReason: null,
    headerTimes: {},
    createdAt: opts.at,
    scheduledAt: null,
    runnableAt: null,
    assignedAt: null,
    startedAt: null,
    finishedAt: null,
    deadlineAt: null,
    unblockedAt: null,
    unblockFields: null,
    triggeredBuild: null,
    unblockedBy: null,
  };
  return {
    retried: { retried: true, retriedInJobId: opts.id, retryType: opts.type, retriedBy: opts.retriedBy },
    attempt,
  };
}
