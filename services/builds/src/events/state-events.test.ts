import { SUBJECTS } from "@conveyor/runtime";
// The marks' rules (withMark, commitOf) are the runtime's, tested beside marked-events.ts.
import { buildChangeSubjects } from "./state-events.js";

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
