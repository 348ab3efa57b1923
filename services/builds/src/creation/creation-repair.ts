import { SUBJECTS } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import type { BuildCancel } from "../lifecycle/build-cancel.js";
import type { Reconcile } from "../lifecycle/reconcile.js";
import { CREATING_GRACE_MS, clearClaim } from "./creation-claims.js";

/** Builds and claims repaired per pass at most. */
const REPAIR_LIMIT = 50;

/**
 * Clears what cut-off creations left.
 *
 * A creation stores its claim, then its jobs, then its build, then removes its claim (build-creation.ts). A claim
 * found past the grace is cleared (creation-claims.ts): the jobs of a build never stored are removed, and a claim
 * whose build stands simply goes. Until then those jobs may be offered to an agent: the assignment finds no build
 * and is refused (job-transitions.ts), and the agent is offered another job.
 *
 * An earlier version stored the build `creating` first, then its jobs, then gave it its first state. Found `creating`
 * past the grace with all its planned jobs, such a build takes its state from them and its creation is announced;
 * with jobs missing it cannot be the build that was asked for, so it is canceled with the jobs it has (`not_run`
 * when it has none). Either way it leaves `creating` and its counters are recounted.
 */
export function createCreationRepair(ctx: BuildsContext, cancel: BuildCancel, reconcile: Reconcile) {
  const { repo, now, withLock, logger } = ctx;

  const repair = async (buildId: string) => {
    const build = await repo.findBuildById(buildId);
    if (build?.state !== "creating") return;
    const jobs = await repo.jobsOf([build.id]);
    await ctx.markCounts(build.pipelineId);
    if (build.plannedJobs !== undefined && jobs.length >= build.plannedJobs) {
      const done = await reconcile(build.id);
      await Promise.all([
        ctx.publishBuild(SUBJECTS.builds.buildCreated, done.build, ""),
        ...done.jobs.filter((job) => job.state === "scheduled").map((job) => ctx.publishJob(job, "pending")),
      ]);
      logger.warn({ buildId, state: done.build.state }, "build creation was cut off: completed from its stored jobs");
    } else {
      const done = await cancel.cancel(build, "its creation was interrupted");
      logger.warn(
        { buildId, stored: jobs.length, planned: build.plannedJobs ?? null, state: done.build.state },
        "build creation was cut off before its jobs were stored: canceled",
      );
    }
    ctx.publishCounts(build.pipelineId);
  };

  return {
    /** One pass: every claim past the grace is cleared, every build left `creating` completed or canceled. */
    async sweep(): Promise<void> {
      const before = new Date(now().getTime() - CREATING_GRACE_MS);
      for (const claim of await repo.claimsBefore(before, REPAIR_LIMIT)) {
        try {
          await withLock(claim.buildId, () => clearClaim(ctx, claim));
        } catch (err) {
          logger.warn({ err, buildId: claim.buildId }, "creation claim not cleared; will try again");
        }
      }
      for (const build of await repo.creatingBefore(before, REPAIR_LIMIT)) {
        try {
          await withLock(build.id, () => repair(build.id));
        } catch (err) {
          logger.warn({ err, buildId: build.id }, "build creation repair failed; will try again");
        }
      }
    },
  };
}
