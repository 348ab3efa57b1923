import { pathProblem } from "./artifact-path.js";
import { nextState } from "./artifact-state.js";
import { batchArtifactIds } from "./batch.js";
import { expiryCutoff, isValidRetention } from "./retention.js";
import { createPathSearch } from "./search.js";

describe("artifact paths", () => {
  it("accepts relative paths and refuses absolute ones, .. segments, control characters and blanks", () => {
    for (const ok of ["a", "dist/a.txt", "./a", "a..b/c", "ünï/日本.txt", "a b/c"])
      expect(pathProblem(ok)).toBeUndefined();
    expect(pathProblem("../a")).toBe("must not contain ..");
    expect(pathProblem("a\\..\\b")).toBe("must not contain ..");
    expect(pathProblem("/a")).toBe("must be relative");
    expect(pathProblem("\\\\server\\a")).toBe("must be relative");
    expect(pathProblem("c:/a")).toBe("must be relative");
    expect(pathProblem("a\nb")).toBe("contains control characters");
    expect(pathProblem(" ")).toBe("can't be blank");
    expect(pathProblem("a".repeat(1025))).toMatch(/longer than 1024/);
  });
});

describe("artifact states", () => {
  it("allows the documented transitions only", () => {
    expect(nextState("new", "upload_finished")).toBe("finished");
    expect(nextState("new", "abandoned")).toBe("error");
    expect(nextState("error", "upload_finished")).toBeUndefined();
    expect(nextState("finished", "deleted")).toBe("deleted");
    expect(nextState("expired", "deleted")).toBe("deleted");
    expect(nextState("deleted", "deleted")).toBeUndefined();
    expect(nextState("finished", "expired")).toBe("expired");
    expect(nextState("new", "expired")).toBeUndefined();
  });
});

describe("batch artifact ids", () => {
  it("are UUIDs, stable for a job, batch and position, and differ otherwise", () => {
    const a = batchArtifactIds("job", "batch", 3);
    expect(a).toEqual(batchArtifactIds("job", "batch", 3));
    expect(new Set(a).size).toBe(3);
    for (const id of a) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(batchArtifactIds("job2", "batch", 1)[0]).not.toBe(a[0]);
  });
});

describe("retention", () => {
  it("accepts 1 to 3650 whole days and cuts off that many days back", () => {
    expect([0, 1, 3650, 3651, 1.5].map(isValidRetention)).toEqual([false, true, true, false, false]);
    expect(expiryCutoff(new Date("2026-03-10T00:00:00Z"), 7).toISOString()).toBe("2026-03-03T00:00:00.000Z");
  });
});

describe("path search", () => {
  const at = (path: string, minute: number) => ({ path, createdAt: new Date(Date.UTC(2026, 0, 1, 0, minute)) });
  it("keeps the newest of each path unless duplicates are asked for, and says when it went past the limit", () => {
    const s = createPathSearch<ReturnType<typeof at>>("*.txt", { includeDuplicates: false, limit: 2 });
    for (const a of [at("a.txt", 1), at("b.txt", 2), at("a.txt", 3), at("c.bin", 4)]) expect(s.add(a)).toBe(true);
    expect(s.result().matches.map((m) => [m.path, m.createdAt.getUTCMinutes()])).toEqual([
      ["a.txt", 3],
      ["b.txt", 2],
    ]);
    expect(s.add(at("c.txt", 5))).toBe(false);
    expect(s.result().truncated).toBe(true);
    const d = createPathSearch<ReturnType<typeof at>>("", { includeDuplicates: true, limit: 10 });
    for (const a of [at("a.txt", 1), at("a.txt", 3)]) d.add(a);
    expect(d.result().matches).toHaveLength(2);
  });
});
