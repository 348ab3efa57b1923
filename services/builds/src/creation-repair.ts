import { SUBJECTS } from "@conveyor/runtime";
import type { BuildCancel } from "./build-cancel.js";
import type { BuildsContext } from "./builds-context.js";
import type { Reconcile } from "./reconcile.js";

/** A creation takes well under this; a build `creating` for longer was cut off (its process died, its store failed). */
export const CREATING_GRACE_MS = 60_000;
/** Builds repaired per pass at most. */
const REPAIR_LIMIT = 50;

/**
 * Finishes what a cut-off creation left: a build stores itself `creating`, then its jobs, then takes its first state
 * (build-creation.ts). Found `creating` past the grace with all its planned jobs, it takes its state from them and
 * its creation is announced; with jobs missing it cannot be the build that was asked for, so it is canceled with
 * the jobs it has (`not_run` when it has none). Either way it leaves `creating` and its counters are recounted.
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
    /** One pass: every build left `creating` past the grace is completed or canceled. */
    async sweep(): Promise<void> {
      const before = new Date(now().getTime() - CREATING_GRACE_MS);
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
