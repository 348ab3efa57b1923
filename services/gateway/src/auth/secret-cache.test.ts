import { createSecretCache } from "./secret-cache.js";

interface Held {
  agent: string;
  job: string;
}

/** A cache over secrets `<agent>/<job>`, counting the lookups that reached the "service". */
function cacheOf(max = 100) {
  const asked: string[] = [];
  const cache = createSecretCache<Held>(
    async (secret) => {
      asked.push(secret);
      const [agent = "", job = ""] = secret.split("/");
      return agent === "unknown" ? null : { agent, job };
    },
    { ttlMs: 60_000, max, namesOf: (h) => [`agent:${h.agent}`, ...(h.job ? [`job:${h.job}`] : [])] },
  );
  return { cache, asked };
}

describe("secret cache", () => {
  it("drops the answers under a name, and only those", async () => {
    const { cache, asked } = cacheOf();
    for (const s of ["a1/j1", "a1/", "a2/j2"]) await cache.get(s);
    cache.evictNamed("agent:a1");
    asked.length = 0;
    for (const s of ["a1/j1", "a1/", "a2/j2"]) await cache.get(s);
    expect(asked).toEqual(["a1/j1", "a1/"]);
    cache.evictNamed("job:j2");
    cache.evictNamed("job:nothing");
    asked.length = 0;
    for (const s of ["a1/j1", "a1/", "a2/j2"]) await cache.get(s);
    expect(asked).toEqual(["a2/j2"]);
  });

  it("keeps its index the size of what it holds: answers that leave the cache leave the index", async () => {
    const { cache } = cacheOf(10);
    for (let i = 0; i < 500; i++) await cache.get(`a${i}/j${i}`);
    // Ten answers held, two names each.
    expect(cache.namedCount).toBe(20);
    await cache.get("unknown/x");
    cache.clear();
    expect(cache.namedCount).toBe(0);
  });

  it("names an answer looked up again once (a replaced answer is not left under its names twice)", async () => {
    const { cache, asked } = cacheOf();
    await cache.get("a1/j1");
    cache.evictNamed("agent:a1");
    await cache.get("a1/j1");
    expect(cache.namedCount).toBe(2);
    cache.evictNamed("job:j1");
    expect(cache.namedCount).toBe(0);
    await cache.get("a1/j1");
    expect(asked).toEqual(["a1/j1", "a1/j1", "a1/j1"]);
  });
});
