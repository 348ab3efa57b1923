import type { BuildsContext } from "../builds-context.js";
import { cancelPlan } from "../domain/state-machine.js";
import type { BuildWithJobs, Reconcile } from "./reconcile.js";

/** How often the sweep looks for cancels left unfinished (by a crash, or by another replica that stopped). */
const SWEEP_EVERY_MS = 30_000;
/** How many such builds one sweep takes up. */
const SWEEP_LIMIT = 20;

/**
 * The rest of a large build's cancel (docs/limits.md#per-build): a reconcile writes at most `cancelBatch` of a
 * cancel's job changes and answers `canceling`; this reconciles the build again, one batch at a time under its lock
 * (released between batches, so that agents' calls on the build are not held up), until no job is left to cancel.
 * Each batch is the reconcile's own compare-and-set writes: safe beside another replica doing the same. A cancel a
 * crash cut short is taken up by the sweep (and by the build's next change, whose reconcile writes the next batch).
 */
export function createCancelContinuation(ctx: BuildsContext, reconcile: () => Reconcile) {
  const { repo, withLock, logger, now } = ctx;
  /** Builds whose cancel this process is continuing, and when it finishes. */
  const continuing = new Map<string, Promise<void>>();
  let sweptAt = Number.NEGATIVE_INFINITY;

  const run = async (buildId: string, first?: BuildWithJobs) => {
    let known = first;
    for (let batch = 1; ; batch++) {
      // Whoever waits for the lock (an agent's finish, a read) goes first.
      await new Promise((resolve) => setImmediate(resolve));
      const result = await withLock(buildId, () => reconcile()(buildId, known));
      const left = cancelPlan(result.jobs).cancel.length;
      if (!result.build.cancelRequested || result.build.finishedAt || left === 0) {
        logger.info({ buildId, batches: batch, state: result.build.state }, "build cancel written");
        return;
      }
      known = result;
    }
  };

  /** Continues the cancel of `buildId` in the background, unless this process already does. */
  const start = (buildId: string, known?: BuildWithJobs) => {
    if (continuing.has(buildId)) return;
    const work = run(buildId, known)
      .catch((err: unknown) =>
        logger.warn({ err, buildId }, "build cancel not finished yet: the sweep or the build's next change goes on"),
      )
      .finally(() => continuing.delete(buildId));
    continuing.set(buildId, work);
  };

  return {
    start,
    /** Finishes every cancel this process continues (tests, and a stop that waits for work under way). */
    async idle(): Promise<void> {
      while (continuing.size > 0) await Promise.all([...continuing.values()]);
    },
    /**
     * Takes up the cancels left unfinished: builds whose cancel was requested and that have not finished, at most
     * SWEEP_LIMIT, every SWEEP_EVERY_MS. A build still waiting for its agents to stop costs one reconcile.
     */
    async sweep(): Promise<void> {
      const at = now().getTime();
      if (at - sweptAt < SWEEP_EVERY_MS) return;
      sweptAt = at;
      for (const build of await repo.unfinishedCancels(SWEEP_LIMIT)) start(build.id);
    },
  };
}

export type CancelContinuation = ReturnType<typeof createCancelContinuation>;
