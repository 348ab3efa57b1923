/**
 * Runs `work(key)` in the background, at most one run per key at a time: a request while a run is under way asks for
 * exactly one more run after it, however many requests arrive meanwhile. For derived values that are recomputed from
 * the database after every change (a pipeline's counters): under load the recomputations coalesce instead of piling
 * up, and the change that asked for one does not wait for it. `work` must handle its own errors; `idle()` resolves
 * when no run is under way or asked for (for shutdown and tests).
 */
export function createCoalescer(work: (key: string) => Promise<void>) {
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
    do {
      running.set(key, false);
      try {
        await work(key);
      } catch {
        // work reports its own errors; a failed run must not stop the next one
      }
    } while (running.get(key) === true);
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
