import { buildsToSupersede, type SupersedeCandidate, type SupersedeSettings } from "./supersede.js";
import { BUILD_STATES, type BuildState } from "./types.js";

const off: SupersedeSettings = {
  skipQueued: false,
  skipQueuedFilter: null,
  cancelRunning: false,
  cancelRunningFilter: null,
};
const both: SupersedeSettings = { ...off, skipQueued: true, cancelRunning: true };

function build(number: number, state: BuildState, extra: Partial<SupersedeCandidate> = {}): SupersedeCandidate {
  return { id: `b${number}`, number, branch: "main", state, blocked: false, ...extra };
}

const newBuild = { branch: "main", number: 10 };

describe("buildsToSupersede: skip queued builds", () => {
  it("skips earlier scheduled builds on the same branch", () => {
    const candidates = [build(7, "scheduled"), build(8, "scheduled"), build(9, "running")];
    expect(buildsToSupersede(newBuild, candidates, { ...off, skipQueued: true })).toEqual({
      skip: ["b7", "b8"],
      cancel: [],
    });
  });

  it("skips only builds in state scheduled", () => {
    const candidates = BUILD_STATES.map((state, i) => build(i + 1, state));
    expect(buildsToSupersede({ branch: "main", number: 100 }, candidates, { ...off, skipQueued: true })).toEqual({
      skip: [`b${BUILD_STATES.indexOf("scheduled") + 1}`],
      cancel: [],
    });
  });

  it("does not skip a build waiting at a block step", () => {
    expect(
      buildsToSupersede(newBuild, [build(9, "scheduled", { blocked: true })], { ...off, skipQueued: true }),
    ).toEqual({
      skip: [],
      cancel: [],
    });
  });

  it("does nothing when the setting is off", () => {
    expect(buildsToSupersede(newBuild, [build(9, "scheduled")], off)).toEqual({ skip: [], cancel: [] });
  });

  it.each<[string | null, string, boolean]>([
    [null, "main", true],
    ["", "main", true],
    ["main", "main", true],
    ["main", "develop", false],
    ["feature/*", "feature/x", true],
    ["!main", "main", false],
    ["!main", "feature/x", true],
  ])("filter %j on branch %j → skips: %s", (filter, branch, skips) => {
    const result = buildsToSupersede({ branch, number: 10 }, [build(9, "scheduled", { branch })], {
      ...off,
      skipQueued: true,
      skipQueuedFilter: filter,
    });
    expect(result.skip).toEqual(skips ? ["b9"] : []);
  });
});

describe("buildsToSupersede: cancel running builds", () => {
  it("cancels earlier running and failing builds on the same branch", () => {
    const candidates = [build(6, "running"), build(7, "failing"), build(8, "scheduled"), build(9, "passed")];
    expect(buildsToSupersede(newBuild, candidates, { ...off, cancelRunning: true })).toEqual({
      skip: [],
      cancel: ["b6", "b7"],
    });
  });

  it("cancels only running and failing builds among the unblocked", () => {
    const candidates = BUILD_STATES.map((state, i) => build(i + 1, state));
    const result = buildsToSupersede({ branch: "main", number: 100 }, candidates, { ...off, cancelRunning: true });
    expect(result.cancel.map((id) => BUILD_STATES[Number(id.slice(1)) - 1])).toEqual(["running", "failing"]);
  });

  it.each<[BuildState]>([["passed"], ["failed"], ["running"]])(
    "cancels a build blocked at a block step showing %s",
    (state) => {
      const result = buildsToSupersede(newBuild, [build(9, state, { blocked: true })], { ...off, cancelRunning: true });
      expect(result.cancel).toEqual(["b9"]);
    },
  );

  it("leaves builds already canceling or canceled alone, blocked or not", () => {
    const candidates = [
      build(7, "canceling", { blocked: true }),
      build(8, "canceled", { blocked: true }),
      build(9, "canceling"),
    ];
    expect(buildsToSupersede(newBuild, candidates, { ...off, cancelRunning: true }).cancel).toEqual([]);
  });

  it("leaves queued builds to the skip setting", () => {
    expect(buildsToSupersede(newBuild, [build(9, "scheduled")], { ...off, cancelRunning: true })).toEqual({
      skip: [],
      cancel: [],
    });
  });

  it.each<[string | null, string, boolean]>([
    [null, "main", true],
    ["main", "main", true],
    ["main", "develop", false],
    ["release/* !release/old", "release/new", true],
    ["release/* !release/old", "release/old", false],
  ])("filter %j on branch %j → cancels: %s", (filter, branch, cancels) => {
    const result = buildsToSupersede({ branch, number: 10 }, [build(9, "running", { branch })], {
      ...off,
      cancelRunning: true,
      cancelRunningFilter: filter,
    });
    expect(result.cancel).toEqual(cancels ? ["b9"] : []);
  });
});

describe("buildsToSupersede: which builds are candidates", () => {
  it("only looks at the same branch", () => {
    const candidates = [build(8, "scheduled", { branch: "develop" }), build(9, "running", { branch: "main-2" })];
    expect(buildsToSupersede(newBuild, candidates, both)).toEqual({ skip: [], cancel: [] });
  });

  it("only looks at earlier builds, never the new build or later ones", () => {
    const candidates = [build(10, "scheduled"), build(11, "scheduled"), build(12, "running"), build(9, "scheduled")];
    expect(buildsToSupersede(newBuild, candidates, both)).toEqual({ skip: ["b9"], cancel: [] });
  });

  it("applies both settings together", () => {
    const candidates = [
      build(5, "running"),
      build(6, "scheduled"),
      build(7, "failing"),
      build(8, "scheduled", { blocked: true }),
    ];
    expect(buildsToSupersede(newBuild, candidates, both)).toEqual({ skip: ["b6"], cancel: ["b5", "b7", "b8"] });
  });

  it("uses each setting's own filter", () => {
    const settings = { ...both, skipQueuedFilter: "main", cancelRunningFilter: "release/*" };
    const candidates = [build(8, "scheduled"), build(9, "running")];
    expect(buildsToSupersede(newBuild, candidates, settings)).toEqual({ skip: ["b8"], cancel: [] });
  });

  it("returns empty lists for no candidates", () => {
    expect(buildsToSupersede(newBuild, [], both)).toEqual({ skip: [], cancel: [] });
  });
});
