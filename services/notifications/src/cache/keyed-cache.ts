/** How a keyed cache is bounded (docs/notifications.md#what-the-handlers-read). */
export interface KeyedCacheOptions {
  /** How long a value is used before it is read again (the backstop for a missed event); 0 keeps nothing. */
  ttlMs: number;
  /** The most values kept; past it the least recently used goes. */
  max: number;
  now?: () => number;
}

/**
 * Values by key, each read once and kept `ttlMs`, at most `max` of them (least recently used first out).
 * Concurrent misses of one key share a single read; a failed read is not kept. `delete` and `clear` also discard
 * reads under way, so a read that started before a change never stores what it found. A stale value is handed to the
 * next read of its key, which may reuse what it derived from it.
 */
export function createKeyedCache<V>(opts: KeyedCacheOptions) {
  const now = opts.now ?? Date.now;
  const entries = new Map<string, { value: V; until: number }>();
  /** Reads under way; a read stores its value only while it is still the one listed here. */
  const reading = new Map<string, Promise<V>>();

  const store = (key: string, value: V) => {
    if (opts.ttlMs <= 0) return;
    entries.delete(key);
    entries.set(key, { value, until: now() + opts.ttlMs });
    while (entries.size > opts.max) entries.delete(entries.keys().next().value as string);
  };

  return {
    /** The value of `key`: kept, being read, or read now by `read(stale)`. */
    get(key: string, read: (stale: V | undefined) => Promise<V>): Promise<V> {
      const hit = entries.get(key);
      if (hit && hit.until > now()) {
        // The most recently used goes last.
        entries.delete(key);
        entries.set(key, hit);
        return Promise.resolve(hit.value);
      }
      const under = reading.get(key);
      if (under) return under;
      const promise: Promise<V> = read(hit?.value).then(
        (value) => {
          if (reading.get(key) === promise) {
            reading.delete(key);
            store(key, value);
          }
          return value;
        },
        (err: unknown) => {
          if (reading.get(key) === promise) reading.delete(key);
          throw err;
        },
      );
      reading.set(key, promise);
      return promise;
    },
    /** The kept value of `key`, fresh or not, without reading or reordering. */
    peek: (key: string): V | undefined => entries.get(key)?.value,
    /** Forgets `key` (it changed): the next get reads it again. */
    delete(key: string): void {
      entries.delete(key);
      reading.delete(key);
    },
    /** Forgets everything (what kept it current may have missed a change). */
    clear(): void {
      entries.clear();
      reading.clear();
    },
    get size(): number {
      return entries.size;
    },
  };
}

export type KeyedCache<V> = ReturnType<typeof createKeyedCache<V>>;
