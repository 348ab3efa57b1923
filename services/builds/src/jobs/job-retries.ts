import { failedPrecondition, newId, notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { UserSnapshot } from "../domain/build.js";
import { clusterQueueIdOf, type Job } from "../domain/job.js";
import { automaticRetryRule, manualRetryProblem, type RetryType, retryOf } from "../domain/retries.js";
import { STOPPED_BY_FAILURE_STATES } from "../domain/state-sets.js";
import { jobEvent, jobEventKey } from "../events/state-events.js";
import type { BuildWithJobs, Reconcile } from "../lifecycle/reconcile.js";

/**
 * Retries: a new attempt of a finished job takes its place. The attempt is stored first and the old job marked
 * retried second, so a crash between the two leaves an attempt whose source is not marked yet, which
 * `completeInterrupted` (run by every reconcile) completes; jobs that failed only because of the retried one go back
 * to pending.
 */
export function createJobRetries(ctx: BuildsContext) {
  const { repo, now } = ctx;

  /** Jobs stopped by an earlier failure get another chance: they go back to pending and are advanced again. */
  const reopenBehind = async (jobs: readonly Job[]) => {
    for (const job of jobs) {
      if (job.retried || !STOPPED_BY_FAILURE_STATES.includes(job.state)) continue;
      await ctx.stateEvents.changeJob(job, { state: "pending", finishedAt: null });
    }
  };

  /** Creates the new attempt of `job`; the caller holds the build's lock and reconciles afterwards. */
  const retry = async (job: Job, jobs: readonly Job[], type: RetryType, by: UserSnapshot | null): Promise<Job> => {
    const { attempt, retried } = retryOf(job, { id: newId(), type, at: now(), retriedBy: by });
    // The attempt names its cluster's queue as it is now (one cached read); the retried job's when it cannot be read.
    const queueIds = await ctx.clusterQueues.of(job.organizationId, job.clusterId);
    if (queueIds) attempt.clusterQueueId = clusterQueueIdOf(attempt, queueIds);
    await ctx.markCounts(job.pipelineId);
    const announced = await ctx.stateEvents.announceNew(attempt, (mark) => jobEventKey(attempt.id, mark), [
      jobEvent(attempt, ""),
    ]);
    await repo.insertJobs([attempt]);
    // Only one retry of a job wins, whichever process makes it: the mark is a compare-and-set on "not retried yet".
    let marked = await ctx.stateEvents.changeJob(job, retried, { notRetried: true });
    // Another process's reconcile may have completed this very retry (completeInterrupted) between the insert and the
    // mark; it announced nothing, so this process does.
    if (!marked) {
      marked = await repo.findJob(job.id).then((j) => (j?.retriedInJobId === attempt.id ? j : null));
      if (marked) await ctx.publishJob(marked, job.state);
    }
    if (!marked) {
      await repo.deleteJob(attempt.id, attempt.state);
      await announced.abandoned();
      throw failedPrecondition("This job has already been retried");
    }
    await announced.stored();
    await reopenBehind(jobs);
    ctx.publishCounts(job.pipelineId);
    ctx.logger.info({ jobId: job.id, attemptId: attempt.id, type }, "job retried");
    return attempt;
  };

  return {
    retry,

    /** Retries a job that just finished when one of its step's automatic rules applies; the new attempt or null. */
    async retryAutomatically(job: Job, jobs: readonly Job[]): Promise<Job | null> {
      return automaticRetryRule(job, jobs) ? retry(job, jobs, "automatic", null) : null;
    },

    /**
     * Completes retries a crash interrupted: an attempt whose source is not marked retried yet marks it. Returns
     * whether anything changed. The caller holds the build's lock.
     */
    async completeInterrupted(jobs: readonly Job[]): Promise<boolean> {
      let completed = false;
      for (const attempt of jobs) {
        const source = attempt.retrySource && jobs.find((j) => j.id === attempt.retrySource?.jobId);
        if (!source) continue;
        // A retry that lost to another (its process died before removing its attempt) leaves an attempt nobody
        // points to: it never ran, and goes.
        if (source.retried && source.retriedInJobId !== attempt.id) {
          if (attempt.state === "pending" && (await repo.deleteJob(attempt.id, "pending"))) completed = true;
          continue;
        }
        if (source.retried) continue;
        const marked = await repo.updateJob(
          source.id,
          source.state,
          { retried: true, retriedInJobId: attempt.id, retryType: attempt.retrySource?.retryType ?? "automatic" },
          { notRetried: true },
        );
        if (marked) completed = true;
      }
      return completed;
    },

    /**
     * A person retries a job of a build (`PUT …/jobs/{id}/retry`): refused with Buildkite's reason when it may not
     * be; the build reopens (a canceled one is no longer canceled, and its jobs the cancel stopped before they
     * started are pending again).
     */
    async retryByHand(
      pipelineId: string,
      number: number,
      jobId: string,
      by: UserSnapshot | null,
      reconcile: Reconcile,
    ): Promise<BuildWithJobs & { job: Job }> {
      const build = pipelineId !== "" && number > 0 ? await repo.findBuild(pipelineId, number) : null;
      if (!build) throw notFound("build");
      return ctx.withLock(build.id, async () => {
        const jobs = await repo.jobsOf([build.id]);
        const job = jobs.find((j) => j.id === jobId);
        if (!job) throw notFound("job");
        const problem = manualRetryProblem(job);
        if (problem) throw failedPrecondition(problem);
        const attempt = await retry(job, jobs, "manual", by);
        // A canceled build resumes: the jobs its cancel stopped before they ever started wait to run again.
        if (build.cancelRequested) {
          for (const stopped of jobs) {
            if (stopped.retried || stopped.state !== "canceled" || stopped.startedAt || stopped.id === job.id) continue;
            await ctx.stateEvents.changeJob(stopped, { state: "pending", finishedAt: null });
          }
        }
        for (let i = 0; i < MAX_ATTEMPTS; i++) {
          const current = await repo.findBuildById(build.id);
          if (!current?.cancelRequested) break;
          if (await repo.updateBuild(current.id, current.version, { cancelRequested: false, cancelReason: null }))
            break;
        }
        const result = await reconcile(build.id);
        return { ...result, job: result.jobs.find((j) => j.id === attempt.id) ?? attempt };
      });
    },
  };
}

export type JobRetries = ReturnType<typeof createJobRetries>;
