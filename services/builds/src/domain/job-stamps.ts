/** The timestamps a job gains as it moves through its states (docs/compatibility.md#build-states, its timestamps). */
import type { Job } from "./job.js";
import { isFinishedJobState } from "./job-states.js";
import type { JobState } from "./types.js";

export type JobStamps = Partial<
  Pick<Job, "scheduledAt" | "runnableAt" | "assignedAt" | "startedAt" | "finishedAt" | "unblockedAt">
>;

/**
 * The timestamps a job gains when it moves to `next` at `at`: scheduled (and runnable) the first time it is
 * scheduled, assigned each time an agent is given it, started the first time it runs, unblocked, and finished the
 * first time it reaches a final state. Stamps it already has are kept.
 */
export function stampsFor(
  job: Pick<Job, "scheduledAt" | "startedAt" | "finishedAt">,
  next: JobState,
  at: Date,
): JobStamps {
  const stamps: JobStamps = {};
  if (next === "scheduled" && !job.scheduledAt) {
    stamps.scheduledAt = at;
    stamps.runnableAt = at;
  }
  if (next === "assigned") stamps.assignedAt = at;
  if (next === "running" && !job.startedAt) stamps.startedAt = at;
  if (next === "unblocked") stamps.unblockedAt = at;
  if (isFinishedJobState(next) && !job.finishedAt) stamps.finishedAt = at;
  return stamps;
}

/**
 * The job changes a cancel plan makes at `at` (each job to canceled or canceling, with its stamps), in the jobs'
 * order; linear in the jobs, however many the plan names.
 */
export function cancelChanges<J extends Pick<Job, "id" | "scheduledAt" | "startedAt" | "finishedAt">>(
  jobs: readonly J[],
  plan: { cancel: readonly string[]; canceling: readonly string[] },
  at: Date,
): Array<{ job: J; update: { state: JobState } & JobStamps }> {
  const cancel = new Set(plan.cancel);
  const canceling = new Set(plan.canceling);
  return jobs.flatMap((job) => {
    const to: JobState | null = cancel.has(job.id) ? "canceled" : canceling.has(job.id) ? "canceling" : null;
    return to ? [{ job, update: { state: to, ...stampsFor(job, to, at) } }] : [];
  });
}
