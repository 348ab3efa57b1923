/**
 * The reads whose barrier gave up (cache-invalidation-feed.ts): each went to the database after waiting the whole
 * BARRIER_TIMEOUT_MS for the invalidation stream's reader, which was then behind. That is worth a warning — the read
 * cache is not serving, and every read is slower by the wait — but a backlog makes many reads give up together, so
 * the warning is said at most once per `everyMs`, with how many gave up since and how far behind the reader was.
 */

/** What a warning says: the reads that gave up since the last warning and the most the reader was behind. */
export interface BarrierTimeoutWarning {
  timedOut: number;
  /** Invalidations (stream messages) the reader had still to apply, at most, when a read gave up. */
  mostBehind: number;
  /** Since when (ms on the clock given) the warning counts. */
  sinceMs: number;
}

/** Counts reads whose barrier gave up; `gaveUp` answers a warning to log when one is due. */
export function createBarrierTimeouts(everyMs = 10_000) {
  let total = 0;
  let pending = 0;
  let mostBehind = 0;
  let since = Number.NEGATIVE_INFINITY;
  let lastWarned = Number.NEGATIVE_INFINITY;
  return {
    /** A read gave up at `nowMs`, the reader `behind` messages short of what the read waited for. */
    gaveUp(nowMs: number, behind: number): BarrierTimeoutWarning | undefined {
      total++;
      if (pending === 0) since = nowMs;
      pending++;
      mostBehind = Math.max(mostBehind, behind);
      if (nowMs - lastWarned < everyMs) return undefined;
      const warning = { timedOut: pending, mostBehind, sinceMs: since };
      lastWarned = nowMs;
      pending = 0;
      mostBehind = 0;
      return warning;
    },
    /** Every read that gave up since the process started. */
    total: () => total,
  };
}
