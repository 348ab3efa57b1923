import { type BuildListFilter, mergeBuildPages, splitBuildList } from "./build-list-query.js";

describe("splitBuildList", () => {
  const f = (extra: Partial<BuildListFilter>): BuildListFilter => ({ organizationIds: ["o1"], ...extra });

  it("keeps a list of one organization, of one pipeline, or of one pipeline among several as one query", () => {
    expect(splitBuildList(f({}))).toEqual([f({})]);
    const pipeline = f({ organizationIds: ["o1", "o2"], pipelineId: "p" });
    expect(splitBuildList(pipeline)).toEqual([pipeline]);
    const onePipeline = f({ organizationIds: [], pipelineIds: ["p1"] });
    expect(splitBuildList(onePipeline)).toEqual([onePipeline]);
  });

  it("splits several organizations into one query each, with every other filter kept", () => {
    const list = f({ organizationIds: ["o1", "o2"], branches: ["main"], states: ["passed"] });
    expect(splitBuildList(list)).toEqual([
      { ...list, organizationIds: ["o1"], pipelineIds: [] },
      { ...list, organizationIds: ["o2"], pipelineIds: [] },
    ]);
  });

  it("gives each readable pipeline a query of its own", () => {
    const list = f({ organizationIds: ["o1"], pipelineIds: ["p1", "p2"], commits: ["c"] });
    expect(splitBuildList(list)).toEqual([
      { ...list, organizationIds: ["o1"], pipelineIds: [] },
      { ...list, organizationIds: [], pipelineIds: ["p1"] },
      { ...list, organizationIds: [], pipelineIds: ["p2"] },
    ]);
  });

  it("leaves more than 32 organizations and pipelines to one query", () => {
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    const many = f({ organizationIds: ids("o", 20), pipelineIds: ids("p", 13) });
    expect(splitBuildList(many)).toEqual([many]);
    expect(splitBuildList(f({ organizationIds: ids("o", 20), pipelineIds: ids("p", 12) }))).toHaveLength(32);
  });
});

describe("mergeBuildPages", () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 0, minute));
  const build = (id: string, minute: number) => ({ _id: id, createdAt: at(minute) });

  it("orders newest first, ties by _id descending, and pages", () => {
    const a = [build("a3", 9), build("a2", 5), build("a1", 1)];
    const b = [build("b2", 7), build("b9", 5), build("b1", 2)];
    expect(mergeBuildPages([a, b], 0, 10).map((x) => x._id)).toEqual(["a3", "b2", "b9", "a2", "b1", "a1"]);
    expect(mergeBuildPages([a, b], 2, 2).map((x) => x._id)).toEqual(["b9", "a2"]);
    expect(mergeBuildPages([a, b], 6, 2)).toEqual([]);
  });

  it("counts a build found by two queries once", () => {
    const shared = build("s", 4);
    expect(mergeBuildPages([[shared, build("x", 1)], [shared]], 0, 5).map((x) => x._id)).toEqual(["s", "x"]);
  });

  it("equals sorting everything and slicing, when each list holds its first skip + limit builds", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 200; round++) {
      const all = Array.from({ length: Math.floor(random() * 60) }, (_, i) => ({
        ...build(`b${String(i).padStart(2, "0")}`, Math.floor(random() * 20)),
        org: Math.floor(random() * 4),
      }));
      const newestFirst = (x: typeof all) =>
        [...x].sort((p, q) => q.createdAt.getTime() - p.createdAt.getTime() || (p._id < q._id ? 1 : -1));
      const skip = Math.floor(random() * 10);
      const limit = 1 + Math.floor(random() * 10);
      const lists = [0, 1, 2, 3].map((org) => newestFirst(all.filter((x) => x.org === org)).slice(0, skip + limit));
      expect(mergeBuildPages(lists, skip, limit)).toEqual(newestFirst(all).slice(skip, skip + limit));
    }
  });
});
