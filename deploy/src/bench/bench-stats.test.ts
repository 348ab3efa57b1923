import { benchSettings, median, selected } from "./bench-stats.js";

describe("median", () => {
  it("takes the middle value, or the mean of the middle two", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe("benchSettings", () => {
  it("defaults to 20 connections, 5 s runs and 3 trials, overridable by env", () => {
    expect(benchSettings({})).toEqual({ connections: 20, durationSec: 5, trials: 3, only: [] });
    expect(benchSettings({ BENCH_TRIALS: "5", BENCH_DURATION: "2" })).toMatchObject({ trials: 5, durationSec: 2 });
    expect(() => benchSettings({ BENCH_CONNECTIONS: "0" })).toThrow(/BENCH_CONNECTIONS must be a positive integer/);
  });
});

describe("selected (BENCH_ONLY)", () => {
  it("selects every target when nothing is named", () => {
    expect(selected(benchSettings({}).only, "POST …/builds (create, c=10)")).toBe(true);
  });

  it("selects the targets whose names contain one of the parts, ignoring case and blanks", () => {
    const { only } = benchSettings({ BENCH_ONLY: " Create, ,page " });
    expect(only).toEqual(["create", "page"]);
    expect(selected(only, "POST …/builds (create, c=10)")).toBe(true);
    expect(selected(only, "GET …/builds (page of 30)")).toBe(true);
    expect(selected(only, "GET …/pipelines/{p}")).toBe(false);
    expect(selected(only, "agents")).toBe(false);
  });
});
