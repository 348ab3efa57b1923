import { failedPrecondition, notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Build } from "../domain/build.js";
import { CANCELABLE_BUILD_STATES, SKIPPED_WITH_BUILD_STATES } from "../domain/state-sets.js";
import type { BuildWithJobs, Reconcile } from "./reconcile.js";

/** Canceling builds: on request, and when a newer build supersedes them. */
export function createBuildCancel(ctx: BuildsContext, reconcile: Reconcile) {
  const { repo, now } = ctx;

  /**
   * Cancels a build: queued jobs at once, jobs on agents via canceling. The request is one write; the reconcile then
   * writes the jobs (a large build's in batches, answering `canceling` until the last: lifecycle/reconcile.ts).
   * Callers hold the build's lock.
   */
  const cancel = async (build: Build, reason: string): Promise<BuildWithJobs> => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      let current = attempt === 0 ? build : await repo.findBuildById(build.id);
      if (!current) throw notFound("build");
      if (!current.cancelRequested) {
        const marked = await repo.updateBuild(current.id, current.version, {
          cancelRequested: true,
          cancelReason: reason || null,
        });
        if (!marked) continue;
        current = marked;
      }
      const reconciled = await reconcile(current.id, { build: current, jobs: await repo.jobsOf([current.id]) });
      ctx.publishCounts(current.pipelineId);
      return reconciled;
    }
    throw new Error(`build ${build.id} could not be canceled under contention`);
  };

  /** Cancel of one build on request, under its lock: 422 with the reason when it cannot be canceled. */
  const cancelOnRequest = async (pipelineId: string, number: number, reason: string): Promise<BuildWithJobs> => {
    const build = await repo.findBuild(pipelineId, number);
    if (!build) throw notFound("build");
    // A build waiting at a block step shows its blocked_state (passed by default) but is not finished.
    const cancelable = CANCELABLE_BUILD_STATES.includes(build.state) || build.blocked;
    if (!cancelable || build.finishedAt)
      throw failedPrecondition(`Build can't be canceled because it's ${build.state}`);
    if (build.cancelRequested) return reconcile(build.id);
    return cancel(build, reason);
  };

  /** Marks a not-yet-started build skipped, with its unstarted jobs. Callers hold the build's lock. */
  const skip = async (id: string) => {
    const build = await repo.findBuildById(id);
    if (build?.state !== "scheduled" || build.startedAt) return;
    const jobs = await repo.jobsOf([id]);
    const at = now();
    await ctx.markCounts(build.pipelineId);
    await ctx.stateEvents.changeJobs(
      jobs
        .filter((job) => SKIPPED_WITH_BUILD_STATES.includes(job.state))
        .map((job) => ({ job, update: { state: "skipped" as const, finishedAt: at } })),
    );
    await ctx.stateEvents.changeBuild(build, { state: "skipped", blocked: false, finishedAt: at });
    ctx.publishCounts(build.pipelineId);
  };

  return { cancel, cancelOnRequest, skip };
}

export type BuildCancel = ReturnType<typeof createBuildCancel>;
