import { compileGlob, GlobError, MAX_GLOB_LENGTH, matchGlob } from "./glob.js";

const cases: Array<[string, string, boolean]> = [
  ["*", "a.txt", true],
  ["*", "dist/a.txt", false],
  ["", "", true],
  ["", "a", false],
  ["dist/*", "dist/a.txt", true],
  ["dist/*", "dist/sub/a.txt", false],
  ["dist/**", "dist/sub/a.txt", true],
  ["dist/**/*", "dist/a.txt", true],
  ["dist/**/*.txt", "dist/a/b/c.txt", true],
  ["dist/**/*.txt", "dist/c.txt", true],
  ["dist/**/*.txt", "distc.txt", false],
  ["**/*.log", "a.log", true],
  ["**/*.log", "x/y/a.log", true],
  ["**", "anything/at/all", true],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/y/b", true],
  ["a/**/b", "a/xb", false],
  ["?.txt", "a.txt", true],
  ["?.txt", "ab.txt", false],
  ["a?b", "a/b", false],
  ["[abc].txt", "b.txt", true],
  ["[abc].txt", "d.txt", false],
  ["[a-c]x", "cx", true],
  ["[!a-c]x", "dx", true],
  ["[^a-c]x", "bx", false],
  ["a[/]b", "a/b", false],
  ["[]]", "]", true],
  ["[", "[", true],
  ["[ab", "[ab", true],
  ["{a,b}.txt", "b.txt", true],
  ["{a,b}.txt", "c.txt", false],
  ["{a,}.txt", ".txt", true],
  ["x{a,{b,c}d}y", "xcdy", true],
  ["x{a,{b,c}d}y", "xay", true],
  ["x{a,{b,c}d}y", "xcy", false],
  ["{", "{", true],
  ["a,b", "a,b", true],
  ["\\*", "*", true],
  ["\\*", "a", false],
  ["\\{a,b\\}", "{a,b}", true],
  ["ünï/*.bin", "ünï/日本.bin", true],
  ["ünï/?.bin", "ünï/日.bin", true],
  ["pkg/*.tar.gz", "pkg/release.tar.gz", true],
  ["pkg/*.tar.gz", "pkg/release.tar", false],
];

describe("globs", () => {
  it.each(cases)("%j against %j → %s", (pattern, path, expected) => {
    expect(matchGlob(compileGlob(pattern), path)).toBe(expected);
  });

  it("compiles once and matches many paths", () => {
    const glob = compileGlob("out/**/*.{js,map}");
    expect(["out/a.js", "out/x/a.map", "out/a.ts", "other/a.js"].filter((p) => matchGlob(glob, p))).toEqual([
      "out/a.js",
      "out/x/a.map",
    ]);
  });

  it("refuses a pattern longer than the limit", () => {
    expect(() => compileGlob("a".repeat(MAX_GLOB_LENGTH + 1))).toThrow(GlobError);
    expect(() => compileGlob("a".repeat(MAX_GLOB_LENGTH))).not.toThrow();
  });

  it("takes linear time on patterns that make backtracking matchers explode", () => {
    const pattern = `${"*a".repeat(100)}b`;
    const path = "a".repeat(1000);
    const glob = compileGlob(pattern);
    const started = process.hrtime.bigint();
    expect(matchGlob(glob, path)).toBe(false);
    const nestedBraces = compileGlob(`${"{a,".repeat(40)}b${"}".repeat(40)}`);
    expect(matchGlob(nestedBraces, "b")).toBe(true);
    expect(matchGlob(nestedBraces, "a")).toBe(true);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    // A backtracking matcher needs on the order of 1000^100 steps here; this one a few hundred thousand.
    expect(ms).toBeLessThan(500);
  });

  it("keeps the state count linear in the pattern length", () => {
    const glob = compileGlob("{a,b}".repeat(50));
    expect(glob.states.length).toBeLessThan(6 * 250);
  });
});
