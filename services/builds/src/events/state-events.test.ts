import { SUBJECTS } from "@conveyor/runtime";
// The marks' rules (withMark, commitOf) are the runtime's, tested beside marked-events.ts.
import { buildChangeSubjects, sameChangeRuns } from "./state-events.js";

describe("state events' rules", () => {
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

describe("sameChangeRuns", () => {
  const change = (state: string, to: string, at = 1) => ({
    job: { state } as never,
    update: { state: to, scheduledAt: new Date(at) } as never,
  });

  it("groups consecutive changes of one kind, in order, and keeps a kind seen again later apart", () => {
    const a = change("pending", "scheduled");
    const b = change("pending", "scheduled");
    const c = change("waiting", "passed");
    const d = change("pending", "scheduled");
    expect(sameChangeRuns([a, b, c, d])).toEqual([[a, b], [c], [d]]);
  });

  it("tells changes with other stamps apart", () => {
    const a = change("pending", "scheduled", 1);
    const b = change("pending", "scheduled", 2);
    expect(sameChangeRuns([a, b])).toEqual([[a], [b]]);
    expect(sameChangeRuns([])).toEqual([]);
  });
});
