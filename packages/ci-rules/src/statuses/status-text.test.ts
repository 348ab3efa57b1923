import { boundedText, durationSuffix, formatDuration } from "./status-text.js";

describe("formatDuration", () => {
  it.each([
    [0, "0 seconds"],
    [999, "0 seconds"],
    [1000, "1 second"],
    [2500, "2 seconds"],
    [60_000, "1 minute"],
    [63_000, "1 minute, 3 seconds"],
    [120_000, "2 minutes"],
    [3_600_000, "1 hour"],
    [3_723_000, "1 hour, 2 minutes, 3 seconds"],
    [7_201_000, "2 hours, 1 second"],
    [-5000, "0 seconds"],
    [Number.NaN, "0 seconds"],
  ])("%d ms is %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("durationSuffix", () => {
  it("is the time between start and finish in parentheses", () => {
    expect(durationSuffix(new Date(0), new Date(63_000))).toBe(" (1 minute, 3 seconds)");
  });
  it("is empty when either time is missing", () => {
    expect(durationSuffix(null, new Date(0))).toBe("");
    expect(durationSuffix(new Date(0), null)).toBe("");
  });
});

describe("boundedText", () => {
  it("keeps short text, trimmed", () => {
    expect(boundedText("  Build #1 passed ", 140)).toBe("Build #1 passed");
  });
  it("cuts long text at whole code points with an ellipsis, at most the bound", () => {
    const cut = boundedText("😀".repeat(200), 140);
    expect(Array.from(cut)).toHaveLength(140);
    expect(cut.endsWith("…")).toBe(true);
    expect(cut).not.toMatch(/[\ud800-\udbff]…$/);
  });
  it("turns control characters into spaces", () => {
    expect(boundedText("a\nb\u0000c\td", 140)).toBe("a b c d");
  });
});
