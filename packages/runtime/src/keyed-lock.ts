/**
 * Runs async work one at a time per key, in arrival order, within this process.
 *
 * Why: FerretDB on SQLite (the embedded default) does not apply a conditional update atomically — concurrent
 * `findOneAndUpdate({_id, state: "a"}, …)` calls can all "win", and concurrent `$inc`s lose updates (measured; see
 * the builds service's integration tests). On MongoDB the conditional updates alone are atomic. Serializing the
 * compare-and-set sections per record inside each service process makes FerretDB deployments (one replica per
 * service) correct too, while unique indexes stay the cross-process guard for invariants such as build numbers.
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
