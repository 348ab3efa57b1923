import type { KeyedLock } from "@conveyor/runtime";

/** How `createLockedRounds` handles a key's items. */
export interface LockedRounds<T> {
  /** The most items one round takes; the rest wait for the next. */
  max: number;
  /** Items with the same id never share a round: the later waits for the next, as it would have for the lock. */
  idOf(item: T): string;
  /** Handles a round under the key's lock; every item must be settled by it (or by `fail` when it throws). */
  run(key: string, round: T[]): Promise<void>;
  /** Settles an item of a round whose `run` threw. */
  fail(item: T, err: unknown): void;
}

/**
 * Group commit under a keyed lock: items added for a key are handled in rounds, each taking, once it holds the key's
 * lock, whatever waited for it meanwhile. A lone item goes at once; those arriving while a round (or anything else
 * holding the lock) runs go together in the next, so n concurrent writes of one build cost a few rounds, not n turns
 * of the lock each with its own round trips.
 */
export function createLockedRounds<T>(withLock: KeyedLock, rounds: LockedRounds<T>) {
  const queues = new Map<string, T[]>();

  /** The next round of `queue`: at most `max` items, one per id, in the order they came; the rest stay queued. */
  const take = (queue: T[]): T[] => {
    const round: T[] = [];
    const later: T[] = [];
    const ids = new Set<string>();
    for (const item of queue.splice(0)) {
      const id = rounds.idOf(item);
      if (round.length >= rounds.max || ids.has(id)) later.push(item);
      else {
        ids.add(id);
        round.push(item);
      }
    }
    queue.push(...later);
    return round;
  };

  const drain = async (key: string, queue: T[]) => {
    while (queue.length > 0) {
      await withLock(key, async () => {
        const round = take(queue);
        try {
          await rounds.run(key, round);
        } catch (err) {
          for (const item of round) rounds.fail(item, err);
        }
      });
    }
    queues.delete(key);
  };

  /** Adds an item for `key`: it is handled in the next round to hold the key's lock. */
  return (key: string, item: T): void => {
    const queue = queues.get(key);
    if (queue) {
      queue.push(item);
      return;
    }
    const fresh = [item];
    queues.set(key, fresh);
    void drain(key, fresh);
  };
}
