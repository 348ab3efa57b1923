/**
 * Database reads shared by requests that want the same thing at the same time: when a change drops a page or a
 * build from the read cache, every dashboard polling it misses at once, and each would read the same documents.
 *
 * A request may take the answer of a read already under way only if that read began after the request arrived:
 * whatever was acknowledged before the request arrived was then stored before the read began, so the shared answer
 * is as fresh as one the request would have read itself. A request that arrived after the read began starts its own
 * (and later arrivals share that one).
 */
export interface SharedReads {
  /** `read()`'s answer, or that of the read of `key` under way when it began after `arrivedAt`. */
  share<T>(key: string, arrivedAt: number, read: () => Promise<T>): Promise<T>;
}

/** Creates the shared reads of one process; `now` is the monotonic clock reads arrive by. */
export function createSharedReads(now: () => number = () => performance.now()): SharedReads {
  const underWay = new Map<string, { startedAt: number; answer: Promise<unknown> }>();
  return {
    share<T>(key: string, arrivedAt: number, read: () => Promise<T>): Promise<T> {
      const running = underWay.get(key);
      if (running && running.startedAt > arrivedAt) return running.answer as Promise<T>;
      const entry = { startedAt: now(), answer: Promise.resolve().then(read) };
      underWay.set(key, entry);
      const done = () => {
        if (underWay.get(key) === entry) underWay.delete(key);
      };
      entry.answer.then(done, done);
      return entry.answer as Promise<T>;
    },
  };
}
