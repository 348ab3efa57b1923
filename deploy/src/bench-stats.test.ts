import { benchSettings, median } from "./bench-stats.js";

describe("median", () => {
  it("takes the middle value, or the mean of the middle two", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe("benchSettings", () => {
  it("defaults to 20 connections, 5 s runs and 3 trials, overridable by env", () => {
    expect(benchSettings({})).toEqual({ connections: 20, durationSec: 5, trials: 3 });
    expect(benchSettings({ BENCH_TRIALS: "5", BENCH_DURATION: "2" })).toMatchObject({ trials: 5, durationSec: 2 });
    expect(() => benchSettings({ BENCH_CONNECTIONS: "0" })).toThrow(/BENCH_CONNECTIONS must be a positive integer/);
  });
});
