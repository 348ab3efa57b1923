import type { Logger } from "pino";
import { fallbackLogger } from "../process/fallback-logger.js";

/**
 * Runs `work(key)` in the background, at most one run per key at a time: a request while a run is under way asks for
 * exactly one more run after it, however many requests arrive meanwhile. For derived values that are recomputed from
 * the database after every change (a pipeline's counters): under load the recomputations coalesce instead of piling
 * up, and the change that asked for one does not wait for it. `work` should handle its own errors: one it throws is
 * logged (to `logger`) and the runs go on. `idle()` resolves when no run is under way or asked for (for shutdown
 * and tests).
 *
 * `gapMs(lastRunMs)` spaces the runs of a key: the run asked for during a run starts that long after it ended. A gap
 * proportional to the run's length bounds the share of the database that recomputations take, however costly they
 * grow, at the price of derived values that lag by that much.
 */
export function createCoalescer(
  work: (key: string) => Promise<void>,
  opts: { gapMs?: (lastRunMs: number) => number; logger?: Pick<Logger, "warn"> } = {},
) {
  /** Keys with a run under way; true when another run was asked for meanwhile. */
  const running = new Map<string, boolean>();
  let waiters: Array<() => void> = [];

  const settle = () => {
    if (running.size > 0) return;
    const done = waiters;
    waiters = [];
    for (const resolve of done) resolve();
  };

  const run = async (key: string) => {
    for (;;) {
      running.set(key, false);
      const started = performance.now();
      try {
        await work(key);
      } catch (err) {
        // A failed run must not stop the next one.
        (opts.logger ?? fallbackLogger()).warn({ err, key }, "a coalesced run failed");
      }
      if (running.get(key) !== true) break;
      const gap = opts.gapMs?.(performance.now() - started) ?? 0;
      if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
    }
    running.delete(key);
    settle();
  };

  return {
    request(key: string): void {
      if (running.has(key)) running.set(key, true);
      else void run(key);
    },
    idle(): Promise<void> {
      if (running.size === 0) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

export type Coalescer = ReturnType<typeof createCoalescer>;
