import { createKeyedCache } from "./keyed-cache.js";

/** A cache on a clock the test moves, and a reader that counts its reads and can be held. */
function setup(opts: { ttlMs?: number; max?: number } = {}) {
  let clock = 0;
  const cache = createKeyedCache<string>({ ttlMs: opts.ttlMs ?? 1_000, max: opts.max ?? 100, now: () => clock });
  const reads: string[] = [];
  let version = 1;
  const read = (key: string) => (stale: string | undefined) => {
    reads.push(key);
    return Promise.resolve(`${key}@${version}${stale ? ` (was ${stale})` : ""}`);
  };
  return {
    cache,
    reads,
    get: (key: string) => cache.get(key, read(key)),
    tick: (ms: number) => {
      clock += ms;
    },
    bump: () => {
      version++;
    },
  };
}

/** A read that resolves when the test says. */
function held<V>() {
  let resolve: (v: V) => void = () => undefined;
  let reject: (err: unknown) => void = () => undefined;
  const promise = new Promise<V>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("createKeyedCache", () => {
  it("reads a key once and answers again from what it kept", async () => {
    const { get, reads } = setup();
    expect(await get("a")).toBe("a@1");
    expect(await get("a")).toBe("a@1");
    expect(reads).toEqual(["a"]);
  });

  it("reads again once the TTL has passed, handing the stale value to the read", async () => {
    const { get, reads, tick, bump } = setup({ ttlMs: 1_000 });
    await get("a");
    tick(999);
    expect(await get("a")).toBe("a@1");
    tick(1);
    bump();
    expect(await get("a")).toBe("a@2 (was a@1)");
    expect(reads).toEqual(["a", "a"]);
  });

  it("keeps nothing with a TTL of 0", async () => {
    const { get, reads, cache } = setup({ ttlMs: 0 });
    await get("a");
    await get("a");
    expect(reads).toEqual(["a", "a"]);
    expect(cache.size).toBe(0);
  });

  it("shares one read among concurrent misses of a key", async () => {
    const cache = createKeyedCache<number>({ ttlMs: 1_000, max: 10 });
    const read = held<number>();
    let reads = 0;
    const answers = Promise.all(
      Array.from({ length: 5 }, () =>
        cache.get("a", () => {
          reads++;
          return read.promise;
        }),
      ),
    );
    read.resolve(7);
    expect(await answers).toEqual([7, 7, 7, 7, 7]);
    expect(reads).toBe(1);
  });

  it("does not keep a failed read, and its waiters all see the failure", async () => {
    const cache = createKeyedCache<number>({ ttlMs: 1_000, max: 10 });
    const read = held<number>();
    const both = [cache.get("a", () => read.promise), cache.get("a", () => read.promise)];
    read.reject(new Error("down"));
    for (const p of both) await expect(p).rejects.toThrow("down");
    expect(await cache.get("a", async () => 3)).toBe(3);
  });

  it("keeps at most max keys, dropping the least recently used", async () => {
    const { get, reads, cache } = setup({ max: 2 });
    await get("a");
    await get("b");
    await get("a"); // a is now the most recently used
    await get("c"); // b goes
    expect(cache.size).toBe(2);
    reads.length = 0;
    await get("a");
    await get("c");
    expect(reads).toEqual([]);
    await get("b");
    expect(reads).toEqual(["b"]);
    expect(cache.size).toBe(2);
  });

  it("forgets a deleted key, and a read under way when it was deleted stores nothing", async () => {
    const cache = createKeyedCache<string>({ ttlMs: 1_000, max: 10 });
    await cache.get("a", async () => "old");
    cache.delete("a");
    const slow = held<string>();
    const first = cache.get("a", () => slow.promise);
    cache.delete("a"); // a change while the read is under way
    const second = cache.get("a", async () => "new");
    slow.resolve("stale");
    expect(await first).toBe("stale");
    expect(await second).toBe("new");
    expect(await cache.get("a", async () => "read again")).toBe("new");
  });

  it("clear forgets every key and the reads under way", async () => {
    const cache = createKeyedCache<string>({ ttlMs: 1_000, max: 10 });
    await cache.get("a", async () => "a1");
    const slow = held<string>();
    const under = cache.get("b", () => slow.promise);
    cache.clear();
    slow.resolve("b-stale");
    await under;
    expect(cache.size).toBe(0);
    expect(await cache.get("a", async () => "a2")).toBe("a2");
    expect(await cache.get("b", async () => "b2")).toBe("b2");
  });

  it("peeks without reading", async () => {
    const { cache, get } = setup();
    expect(cache.peek("a")).toBeUndefined();
    await get("a");
    expect(cache.peek("a")).toBe("a@1");
  });
});
