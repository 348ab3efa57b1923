import { Code, ConnectError } from "@connectrpc/connect";
import { invalidFields } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Job } from "../domain/job.js";
import {
  MAX_PROMISE_REASON,
  MAX_PROMISED_EXIT_STATUS,
  MIN_PROMISED_EXIT_STATUS,
  promiseOutcome,
} from "../domain/promised-failure.js";
import type { Reconcile } from "../lifecycle/reconcile.js";
import { requireRunningJob } from "./running-job.js";

/**
 * A running job promises the failing exit status it will finish with (`buildkite-agent job promise-failure`,
 * docs/compatibility.md#steps-from-inside-a-job): stored once, the same promise again changes nothing, another one is
 * AlreadyExists; the build is reconciled at once, so it is failing from then on.
 */
export function createPromisedFailures(ctx: BuildsContext, reconcile: Reconcile) {
  const { repo, withLock } = ctx;
  return async (jobId: string, exitStatus: number, reason: string): Promise<Job> => {
    const problems = [
      ...(Number.isInteger(exitStatus) &&
      exitStatus >= MIN_PROMISED_EXIT_STATUS &&
      exitStatus <= MAX_PROMISED_EXIT_STATUS
        ? []
        : [
            {
              field: "exit_status",
              code: `must be a whole number from ${MIN_PROMISED_EXIT_STATUS} to ${MAX_PROMISED_EXIT_STATUS}`,
            },
          ]),
      ...([...reason].length > MAX_PROMISE_REASON
        ? [{ field: "reason", code: `is too long (maximum is ${MAX_PROMISE_REASON} characters)` }]
        : []),
    ];
    if (problems.length > 0) throw invalidFields(problems);
    const found = await requireRunningJob(repo, jobId);
    return withLock(found.buildId, async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const job = await requireRunningJob(repo, jobId);
        const outcome = promiseOutcome(job, exitStatus);
        if (outcome === "conflict")
          throw new ConnectError(
            `The job already promised exit status ${job.promisedExitStatus}: a different one cannot be promised`,
            Code.AlreadyExists,
          );
        if (outcome === "same") return job;
        await ctx.markCounts(job.pipelineId);
        const updated = await repo.updateJob(job.id, job.state, {
          promisedExitStatus: exitStatus,
          promisedFailureReason: reason || null,
        });
        if (!updated) continue;
        await reconcile(job.buildId);
        ctx.publishCounts(job.pipelineId);
        return updated;
      }
      throw new Error(`job ${jobId} kept changing under ${MAX_ATTEMPTS} attempts`);
    });
  };
}

export type PromisedFailures = ReturnType<typeof createPromisedFailures>;
