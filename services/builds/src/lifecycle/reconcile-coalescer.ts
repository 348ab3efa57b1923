import type { KeyedLock } from "@conveyor/runtime";
import type { BuildWithJobs, Reconcile } from "./reconcile.js";

/**
 * Reconciles after job writes, shared among the writes that wait for it: each caller gets a reconcile of its build
 * that began after it asked (so it sees the caller's write), and the callers that ask while one runs share the next.
 * A reconcile reads every job of its build: one per agent call would make a build of n jobs cost n² reads when its
 * agents call at once (50 parallel jobs accepted together answered 504); shared, it costs one per burst.
 */
export function createReconcileCoalescer(withLock: KeyedLock, reconcile: Reconcile) {
  const queued = new Map<string, Array<{ resolve(r: BuildWithJobs): void; reject(err: unknown): void }>>();

  const drain = async (buildId: string, waiting: NonNullable<ReturnType<typeof queued.get>>) => {
    while (waiting.length > 0) {
      const batch = waiting.splice(0);
      try {
        const result = await withLock(buildId, () => reconcile(buildId));
        for (const w of batch) w.resolve(result);
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    queued.delete(buildId);
  };

  /** A reconcile of `buildId` begun after this call, shared with the other callers waiting for one. */
  return (buildId: string): Promise<BuildWithJobs> =>
    new Promise((resolve, reject) => {
      const waiting = queued.get(buildId);
      if (waiting) {
        waiting.push({ resolve, reject });
        return;
      }
      const fresh = [{ resolve, reject }];
      queued.set(buildId, fresh);
      void drain(buildId, fresh);
    });
}

export type ReconcileAfterWrite = ReturnType<typeof createReconcileCoalescer>;
