import { aBuild, aJob } from "../test-support.js";
import { createReadCache, type Invalidation, listScopes, mergeInvalidations } from "./read-cache.js";

const b1 = aBuild({ id: "b1", pipelineId: "p1", organizationId: "o1", number: 1 });
const b2 = aBuild({ id: "b2", pipelineId: "p1", organizationId: "o1", number: 2 });
const other = aBuild({ id: "b9", pipelineId: "p9", organizationId: "o9", number: 1 });
const j1 = aJob({ id: "j1", buildId: "b1", pipelineId: "p1", buildNumber: 1 });
const none: Invalidation = { builds: [], pipelines: [], organizations: [] };
const buildInvalidation = (b: typeof b1): Invalidation => ({
  builds: [b.id],
  pipelines: [b.pipelineId],
  organizations: [b.organizationId],
});

describe("read cache: builds", () => {
  it("serves a build kept with its jobs by pipeline and number, and by id", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1, [j1]);
    expect(cache.byNumber("p1", 1, true)).toEqual({ build: b1, jobs: [j1] });
    expect(cache.byId("b1")?.build).toBe(b1);
    expect(cache.byNumber("p1", 2, false)).toBeUndefined();
  });

  it("does not serve a build kept without jobs to a read that needs them", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1);
    expect(cache.byNumber("p1", 1, false)?.build).toBe(b1);
    expect(cache.byNumber("p1", 1, true)).toBeUndefined();
  });

  it("drops a build its invalidation names, and no other", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1, [j1]);
    cache.keepBuild(cache.ticket(), other, []);
    cache.invalidate(buildInvalidation(b1));
    expect(cache.byNumber("p1", 1, false)).toBeUndefined();
    expect(cache.byNumber("p9", 1, true)?.build).toBe(other);
  });

  it("never keeps what a read got when the build changed after the read began (the race)", () => {
    const cache = createReadCache();
    const ticket = cache.ticket();
    cache.invalidate(buildInvalidation(b1)); // a change lands while the database is being read
    cache.keepBuild(ticket, b1, [j1]);
    expect(cache.byId("b1")).toBeUndefined();
    // A read begun after the change may keep its answer.
    cache.keepBuild(cache.ticket(), b1, [j1]);
    expect(cache.byId("b1")?.jobs).toEqual([j1]);
  });

  it("a change of jobs drops the jobs kept and keeps the build", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1, [j1]);
    cache.invalidate({ ...none, jobsOf: ["b1"] });
    expect(cache.byNumber("p1", 1, true)).toBeUndefined();
    expect(cache.byNumber("p1", 1, false)?.build).toBe(b1);
  });

  it("jobs read before a change of them are not kept, with their build or alone", () => {
    const cache = createReadCache();
    const ticket = cache.ticket();
    cache.invalidate({ ...none, jobsOf: ["b1"] });
    cache.keepBuild(ticket, b1, [j1]);
    expect(cache.byId("b1")).toEqual({ build: b1 });
    cache.keepJobs(ticket, "b1", [j1]);
    expect(cache.byId("b1")?.jobs).toBeUndefined();
    cache.keepJobs(cache.ticket(), "b1", [j1]);
    expect(cache.byId("b1")?.jobs).toEqual([j1]);
  });

  it("keeps the jobs it has when the build is kept again without jobs", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1, [j1]);
    cache.keepBuild(cache.ticket(), b1);
    expect(cache.byNumber("p1", 1, true)?.jobs).toEqual([j1]);
  });

  it("keeps jobs only onto a kept build", () => {
    const cache = createReadCache();
    cache.keepJobs(cache.ticket(), "b1", [j1]);
    expect(cache.byId("b1")).toBeUndefined();
  });

  it("serves nothing after `everything` or clear, and keeps nothing read before them", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1, [j1]);
    const ticket = cache.ticket();
    cache.invalidate({ ...none, everything: true });
    expect(cache.size().builds).toBe(0);
    cache.keepBuild(ticket, b2, []);
    expect(cache.byId("b2")).toBeUndefined();
    cache.keepBuild(cache.ticket(), b2, []);
    cache.clear();
    expect(cache.byId("b2")).toBeUndefined();
  });

  it("forgets builds past its size, oldest first, with their numbers", () => {
    const cache = createReadCache({ maxBuilds: 2 });
    const t = cache.ticket();
    cache.keepBuild(t, b1, []);
    cache.keepBuild(t, b2, []);
    cache.keepBuild(t, other, []);
    expect(cache.byNumber("p1", 1, false)).toBeUndefined();
    expect(cache.byNumber("p1", 2, false)?.build).toBe(b2);
    expect(cache.byNumber("p9", 1, false)?.build).toBe(other);
  });

  it("serves nothing older than its TTL", async () => {
    const cache = createReadCache({ ttlMs: 20 });
    cache.keepBuild(cache.ticket(), b1, []);
    await new Promise((r) => setTimeout(r, 40));
    expect(cache.byId("b1")).toBeUndefined();
  });

  it("folding stamps past their bound makes every earlier read's answer unkeepable (safe, never stale)", () => {
    const cache = createReadCache({ maxStamps: 3 });
    const ticket = cache.ticket();
    for (let i = 0; i < 5; i++) cache.invalidate({ ...none, builds: [`x${i}`] });
    cache.keepBuild(ticket, b1, []);
    expect(cache.byId("b1")).toBeUndefined();
    expect(cache.size().stamps).toBeLessThanOrEqual(3);
  });
});

describe("read cache: lists", () => {
  const scopes = listScopes({ organizationIds: ["o1"], pipelineIds: [], pipelineId: "p1" });

  it("serves a kept list until a build of one of its scopes changes", () => {
    const cache = createReadCache();
    cache.keepList(cache.ticket(), "k", scopes, ["b2", "b1"]);
    expect(cache.list("k")).toEqual(["b2", "b1"]);
    cache.invalidate(buildInvalidation(other));
    expect(cache.list("k")).toEqual(["b2", "b1"]);
    cache.invalidate(buildInvalidation(b1));
    expect(cache.list("k")).toBeUndefined();
  });

  it("a change of jobs alone leaves lists (they filter on builds)", () => {
    const cache = createReadCache();
    cache.keepList(cache.ticket(), "k", scopes, ["b1"]);
    cache.invalidate({ ...none, jobsOf: ["b1"] });
    expect(cache.list("k")).toEqual(["b1"]);
  });

  it("an organization-wide list goes with any change in its organization", () => {
    const cache = createReadCache();
    cache.keepList(cache.ticket(), "org", listScopes({ organizationIds: ["o1"] }), ["b1"]);
    cache.invalidate({ builds: ["b3"], pipelines: ["p3"], organizations: ["o1"] });
    expect(cache.list("org")).toBeUndefined();
  });

  it("a list read before a change of its scope is not kept", () => {
    const cache = createReadCache();
    const ticket = cache.ticket();
    cache.invalidate(buildInvalidation(b2));
    cache.keepList(ticket, "k", scopes, ["b1"]);
    expect(cache.list("k")).toBeUndefined();
  });

  it("removals by id (allLists) drop every list", () => {
    const cache = createReadCache();
    cache.keepList(cache.ticket(), "k", scopes, ["b1"]);
    cache.keepList(cache.ticket(), "k9", listScopes({ organizationIds: ["o9"] }), ["b9"]);
    cache.invalidate({ ...none, builds: ["b1"], allLists: true });
    expect(cache.list("k")).toBeUndefined();
    expect(cache.list("k9")).toBeUndefined();
  });
});

describe("mergeInvalidations", () => {
  it("gives a lone invalidation as it is", () => {
    const t = buildInvalidation(b1);
    expect(mergeInvalidations([t])).toBe(t);
  });

  it("unites what each invalidation names, each id once, and keeps every flag any of them set", () => {
    const merged = mergeInvalidations([
      buildInvalidation(b1),
      { ...none, jobsOf: ["b2"] },
      { builds: ["b1", "b3"], pipelines: ["p1", "p2"], organizations: ["o1"], allLists: true },
      { ...none, jobsOf: ["b2", "b1"] },
    ]);
    expect(merged).toEqual({
      builds: ["b1", "b3"],
      pipelines: ["p1", "p2"],
      organizations: ["o1"],
      jobsOf: ["b2", "b1"],
      allLists: true,
    });
    expect(mergeInvalidations([none, { ...none, everything: true }])).toEqual({ ...none, everything: true });
    expect(mergeInvalidations([none, none])).toEqual(none);
  });

  it("drops from a cache what the invalidations would have dropped one by one", () => {
    const cache = createReadCache();
    cache.keepBuild(cache.ticket(), b1, [j1]);
    cache.keepBuild(cache.ticket(), other, []);
    cache.invalidate(mergeInvalidations([{ ...none, jobsOf: ["b1"] }, buildInvalidation(other)]));
    expect(cache.byId("b1")?.jobs).toBeUndefined();
    expect(cache.byId("b1")?.build).toBe(b1);
    expect(cache.byId("b9")).toBeUndefined();
  });
});
