/**
 * Build numbers handed out per pipeline, one counter increment for every create waiting at that moment.
 *
 * Every create needs the next number of its pipeline from a counter in the database (an atomic `$inc`, so several
 * processes never take the same one). Taking them one by one makes the counter the serial point of a busy pipeline:
 * ten concurrent creates wait for ten increments in a row. Here the creates that arrive while an increment is under
 * way wait for the next one, which takes as many numbers as there are waiters and hands them out in arrival order:
 * numbers stay contiguous and in order within a process, and a range taken is never taken again anywhere.
 */
export type TakeNumbers = (pipelineId: string, count: number) => Promise<number>;

interface Waiter {
  resolve(n: number): void;
  reject(err: unknown): void;
}

/** `take(pipelineId, count)` increments the pipeline's counter by `count` and returns the last number taken. */
export function createNumberAllocator(take: TakeNumbers) {
  const pipelines = new Map<string, { waiting: Waiter[]; taking: boolean }>();

  const pump = (pipelineId: string) => {
    const state = pipelines.get(pipelineId);
    if (!state || state.taking) return;
    if (state.waiting.length === 0) {
      pipelines.delete(pipelineId);
      return;
    }
    const batch = state.waiting.splice(0);
    state.taking = true;
    take(pipelineId, batch.length)
      .then(
        (last) => {
          const first = last - batch.length + 1;
          batch.forEach((w, i) => {
            w.resolve(first + i);
          });
        },
        (err) => {
          for (const w of batch) w.reject(err);
        },
      )
      .finally(() => {
        state.taking = false;
        pump(pipelineId);
      });
  };

  return {
    /** The next build number of a pipeline. */
    next(pipelineId: string): Promise<number> {
      return new Promise<number>((resolve, reject) => {
        let state = pipelines.get(pipelineId);
        if (!state) {
          state = { waiting: [], taking: false };
          pipelines.set(pipelineId, state);
        }
        state.waiting.push({ resolve, reject });
        pump(pipelineId);
      });
    },
  };
}

export type NumberAllocator = ReturnType<typeof createNumberAllocator>;
