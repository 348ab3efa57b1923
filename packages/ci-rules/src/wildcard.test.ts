import { wildcardMatch } from "./wildcard.js";

describe("wildcardMatch", () => {
  it.each([
    ["main", "main", true],
    ["main", "mainline", false],
    ["*", "", true],
    ["*", "anything/at/all", true],
    ["features/*", "features/login", true],
    ["features/*", "feature/login", false],
    ["*-test", "branch-test", true],
    ["*-test", "branch-tests", false],
    ["v*.0", "v1.0", true],
    ["v*.0", "v1.01", false],
    ["a*b*c", "abc", true],
    ["a*b*c", "aXbYc", true],
    ["a*b*c", "acb", false],
    ["*ab*ab*", "abab", true],
    ["*ab*ab*", "aba", false],
    ["a**b", "ab", true],
    ["x*x", "x", false],
    ["x*x", "xx", true],
    ["?.[]", "?.[]", true],
    ["linux*", "linux-arm64", true],
  ])("%j against %j is %s", (pattern, text, expected) => {
    expect(wildcardMatch(pattern, text)).toBe(expected);
  });

  it("answers patterns that make backtracking regexes explode at once", () => {
    const pattern = `${"*a".repeat(30)}*b`;
    const text = "a".repeat(100_000);
    const started = process.hrtime.bigint();
    expect(wildcardMatch(pattern, text)).toBe(false);
    expect(wildcardMatch(pattern, `${text}b`)).toBe(true);
    // Two linear scans of 100 kB; a backtracking engine would not finish this in any reasonable time.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(500);
  });

  it("agrees with an anchored regular expression on random small cases", () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pick = (alphabet: string, length: number) =>
      Array.from({ length }, () => alphabet[random(alphabet.length)]).join("");
    for (let i = 0; i < 3000; i++) {
      const pattern = pick("ab*", random(7));
      const text = pick("ab", random(8));
      const regex = new RegExp(`^${pattern.replace(/\*/g, ".*")}$`, "s");
      expect([pattern, text, wildcardMatch(pattern, text)]).toEqual([pattern, text, regex.test(text)]);
    }
  });
});
