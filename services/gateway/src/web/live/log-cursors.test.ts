import { formatCursors, MAX_FOLLOWED_LOGS, parseCursors } from "./log-cursors.js";

describe("log cursors", () => {
  it("reads back what it writes, an empty list included", () => {
    const cursors = new Map([
      ["44444444-0000-4000-8000-000000000001", 0],
      ["44444444-0000-4000-8000-000000000002", 123_456],
    ]);
    expect(parseCursors(formatCursors(cursors))).toEqual(cursors);
    expect(parseCursors("")).toEqual(new Map());
    expect(parseCursors("a:1,a:2")).toEqual(new Map([["a", 2]]));
  });

  it("refuses what is not a list of job:offset pairs, and more logs than a page follows", () => {
    for (const bad of [
      "a",
      "a:",
      ":1",
      "a:-1",
      "a:1.5",
      "a:1e3",
      "a:99999999999999",
      "a b:1",
      "a:1,",
      `${"x".repeat(65)}:1`,
    ])
      expect(parseCursors(bad)).toBeNull();
    const many = Array.from({ length: MAX_FOLLOWED_LOGS + 1 }, (_, i) => `j${i}:0`).join(",");
    expect(parseCursors(many)).toBeNull();
    expect(parseCursors(many.slice(0, many.lastIndexOf(",")))?.size).toBe(MAX_FOLLOWED_LOGS);
  });
});
