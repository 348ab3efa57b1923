/**
 * Runs async work one at a time per key, in arrival order, within this process.
 *
 * Why: upstream FerretDB v1 does not apply a conditional update atomically — concurrent
 * `findOneAndUpdate({_id, state: "a"}, …)` calls can all "win", and concurrent `$inc`s lose updates (measured). The
 * bundled FerretDB carries a patch that makes them atomic (deploy/ferretdb/atomic-updates.patch), and on MongoDB
 * they are atomic anyway; serializing the compare-and-set sections per record inside each service process keeps a
 * service correct on an unpatched FerretDB too, and spares the database contention on hot records. Unique indexes
 * stay the cross-process guard for invariants such as build numbers.
 * Not re-entrant: never take the same key twice in one call chain.
 */
export function createKeyedLock() {
  const tails = new Map<string, Promise<void>>();
  return async function withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}

export type KeyedLock = ReturnType<typeof createKeyedLock>;
