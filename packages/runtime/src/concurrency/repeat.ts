import type { Logger } from "../process/logger.js";

export interface RepeatOptions {
  /** What the work is, for the warning its failure logs. */
  what: string;
  /** The gap after a run before the next one begins. */
  everyMs: number;
  /**
   * The gap is at least this many times the last run's length: work whose cost grows with the data (reading every
   * queued job) then takes at most 1 / (1 + costFactor) of the time of what it reads, instead of all of it.
   */
  costFactor?: number;
  logger: Pick<Logger, "warn">;
}

/**
 * Runs periodic background work (sweeps, relays, refreshes) one run at a time: the next run begins a gap after the
 * last one ended, never beside it, so work slowed down by a loaded database does not pile up. Failures are logged
 * and the next run goes ahead. Returns a function that stops it; the timer does not keep the process alive.
 */
export function repeat(work: () => Promise<unknown>, opts: RepeatOptions): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (gapMs: number) => {
    if (stopped) return;
    timer = setTimeout(run, gapMs);
    timer.unref();
  };
  const run = async () => {
    const started = performance.now();
    try {
      await work();
    } catch (err) {
      opts.logger.warn({ err }, `${opts.what} failed`);
    }
    schedule(Math.max(opts.everyMs, (opts.costFactor ?? 0) * (performance.now() - started)));
  };
  schedule(opts.everyMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
