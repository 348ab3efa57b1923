import { SUBJECTS } from "@conveyor/runtime";
import { buildChangeSubjects, commitOf, MAX_MARKS, UNCOMMITTED_AFTER_MS, withMark } from "./state-events.js";

describe("state events' rules", () => {
  it("keep a document's latest marks, the new one last", () => {
    expect(withMark(undefined, "a")).toEqual(["a"]);
    const full = Array.from({ length: MAX_MARKS }, (_, i) => `m${i}`);
    expect(withMark(full, "new")).toEqual([...full.slice(1), "new"]);
    expect(withMark(full, "new")).toHaveLength(MAX_MARKS);
  });

  it.each<[string, string[] | null, number, string]>([
    ["the mark on its document", ["x", "m"], 0, "publish"],
    ["the mark on its document, long after", ["m"], UNCOMMITTED_AFTER_MS * 10, "publish"],
    ["no mark yet, within the wait", ["x"], UNCOMMITTED_AFTER_MS - 1, "wait"],
    ["no document yet, within the wait", null, 1_000, "wait"],
    ["no mark after the wait", ["x"], UNCOMMITTED_AFTER_MS + 1, "drop"],
    ["no document after the wait", null, UNCOMMITTED_AFTER_MS + 1, "drop"],
  ])("an entry with %s: %s", (_name, marks, ageMs, verdict) => {
    const at = new Date(1_000_000);
    expect(commitOf(marks, "m", at, new Date(at.getTime() + ageMs))).toBe(verdict);
  });

  it("announce a build's state change, then its end", () => {
    const before = { state: "running", finishedAt: null } as never;
    expect(buildChangeSubjects(before, { state: "failing", finishedAt: null } as never)).toEqual([
      SUBJECTS.builds.buildStateChanged,
    ]);
    expect(buildChangeSubjects(before, { state: "passed", finishedAt: new Date() } as never)).toEqual([
      SUBJECTS.builds.buildStateChanged,
      SUBJECTS.builds.buildFinished,
    ]);
    expect(buildChangeSubjects(before, { state: "running", finishedAt: null } as never)).toEqual([]);
  });
});
