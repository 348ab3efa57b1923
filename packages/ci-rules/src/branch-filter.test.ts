import { branchFilterProblem, branchFilterTerms, matchesBranchFilter } from "./branch-filter.js";

describe("matchesBranchFilter: documented examples (B6)", () => {
  it.each<[string, string, boolean]>([
    ["main", "main", true],
    ["main", "master", false],
    ["main", "main2", false],
    ["main", "feature/main", false],
    ["!production", "production", false],
    ["!production", "main", true],
    ["!production", "production-2", true],
    ["!production", "staging/production", true],
    ["main features/*", "main", true],
    ["main features/*", "features/login", true],
    ["main features/*", "features/", true],
    ["main features/*", "features/a/b/c", true],
    ["main features/*", "feature/login", false],
    ["main features/*", "develop", false],
    ["*-test", "feature-test", true],
    ["*-test", "-test", true],
    ["*-test", "a/b-test", true],
    ["*-test", "feature-test-2", false],
    ["*-test", "test", false],
    ["stages/* !stages/production", "stages/demo", true],
    ["stages/* !stages/production", "stages/production", false],
    ["stages/* !stages/production", "stages/production-eu", true],
    ["stages/* !stages/production", "main", false],
    ["v*.0", "v1.0", true],
    ["v*.0", "v10.0", true],
    ["v*.0", "v1.1", false],
    ["v*.0", "v1x0", false],
    ["v* !v1.*", "v2.3", true],
    ["v* !v1.*", "v1.1", false],
    ["v* !v1.*", "v1.0", false],
    ["v* !v1.*", "v10.1", true],
  ])("%j against %j → %s", (pattern, branch, expected) => {
    expect(matchesBranchFilter(pattern, branch)).toBe(expected);
  });
});

describe("matchesBranchFilter: all branches", () => {
  it.each([null, undefined, "", " ", "\t\n", "*", " * "])("%j matches every branch", (pattern) => {
    for (const branch of ["main", "feature/x", "a b", "", "v1.0"]) {
      expect(matchesBranchFilter(pattern, branch)).toBe(true);
    }
  });
});

describe("matchesBranchFilter: wildcards", () => {
  it("* matches across slashes", () => {
    expect(matchesBranchFilter("release/*", "release/2024/q1")).toBe(true);
    expect(matchesBranchFilter("*/fix", "team/a/fix")).toBe(true);
  });

  it("* matches an empty run", () => {
    expect(matchesBranchFilter("main*", "main")).toBe(true);
    expect(matchesBranchFilter("*main", "main")).toBe(true);
    expect(matchesBranchFilter("ma*in", "main")).toBe(true);
  });

  it("several wildcards in one term", () => {
    expect(matchesBranchFilter("*fix*", "hotfix/42")).toBe(true);
    expect(matchesBranchFilter("a*b*c", "a-b-c")).toBe(true);
    expect(matchesBranchFilter("a*b*c", "a-c-b")).toBe(false);
    expect(matchesBranchFilter("**", "anything")).toBe(true);
  });

  it("the whole branch must match, not a part", () => {
    expect(matchesBranchFilter("feat", "feature")).toBe(false);
    expect(matchesBranchFilter("ture", "feature")).toBe(false);
    expect(matchesBranchFilter("feat*", "my-feature")).toBe(false);
  });
});

describe("matchesBranchFilter: literal characters", () => {
  it("regular expression characters are literal", () => {
    expect(matchesBranchFilter("v1.0", "v1x0")).toBe(false);
    expect(matchesBranchFilter("v1.0", "v1.0")).toBe(true);
    expect(matchesBranchFilter("a+b", "a+b")).toBe(true);
    expect(matchesBranchFilter("a+b", "aab")).toBe(false);
    expect(matchesBranchFilter("fix?", "fix?")).toBe(true);
    expect(matchesBranchFilter("fix?", "fixe")).toBe(false);
    expect(matchesBranchFilter("[abc]", "[abc]")).toBe(true);
    expect(matchesBranchFilter("[abc]", "a")).toBe(false);
    expect(matchesBranchFilter("(x|y)", "x")).toBe(false);
    expect(matchesBranchFilter("^main$", "^main$")).toBe(true);
    expect(matchesBranchFilter("a\\b", "a\\b")).toBe(true);
    expect(matchesBranchFilter("{a,b}", "a")).toBe(false);
  });

  it("is case-sensitive", () => {
    expect(matchesBranchFilter("Main", "main")).toBe(false);
    expect(matchesBranchFilter("!Main", "main")).toBe(true);
  });

  it("a ! inside a term is literal", () => {
    expect(matchesBranchFilter("wow!", "wow!")).toBe(true);
    expect(matchesBranchFilter("wow!", "wow")).toBe(false);
  });
});

describe("matchesBranchFilter: several terms", () => {
  it("any positive term is enough", () => {
    expect(matchesBranchFilter("main develop release/*", "develop")).toBe(true);
    expect(matchesBranchFilter("main develop release/*", "release/1")).toBe(true);
    expect(matchesBranchFilter("main develop release/*", "hotfix")).toBe(false);
  });

  it("any negative term vetoes", () => {
    expect(matchesBranchFilter("* !main !develop", "main")).toBe(false);
    expect(matchesBranchFilter("* !main !develop", "develop")).toBe(false);
    expect(matchesBranchFilter("* !main !develop", "feature")).toBe(true);
  });

  it("only negative terms behave as if * were present", () => {
    expect(matchesBranchFilter("!main !develop", "feature/x")).toBe(true);
    expect(matchesBranchFilter("!main !develop", "main")).toBe(false);
    expect(matchesBranchFilter("!release/*", "release/1")).toBe(false);
    expect(matchesBranchFilter("!release/*", "main")).toBe(true);
  });

  it("a negation beats a positive term naming the same branch", () => {
    expect(matchesBranchFilter("main !main", "main")).toBe(false);
    expect(matchesBranchFilter("!main main", "main")).toBe(false);
  });

  it("!* excludes everything", () => {
    expect(matchesBranchFilter("!*", "main")).toBe(false);
    expect(matchesBranchFilter("main !*", "main")).toBe(false);
  });

  it("any whitespace separates terms and extra whitespace is ignored", () => {
    expect(matchesBranchFilter("  main\tdevelop\n", "develop")).toBe(true);
    expect(matchesBranchFilter("main   !x", "main")).toBe(true);
  });

  it("order of terms does not matter", () => {
    expect(matchesBranchFilter("!stages/production stages/*", "stages/demo")).toBe(true);
    expect(matchesBranchFilter("!stages/production stages/*", "stages/production")).toBe(false);
  });

  it("an empty negation is ignored when matching", () => {
    expect(matchesBranchFilter("main !", "main")).toBe(true);
    expect(matchesBranchFilter("!", "anything")).toBe(true);
  });

  it("gives the same answers when a pattern is reused (cache)", () => {
    for (let i = 0; i < 3; i++) {
      expect(matchesBranchFilter("v* !v1.*", "v2.3")).toBe(true);
      expect(matchesBranchFilter("v* !v1.*", "v1.3")).toBe(false);
    }
  });

  it("survives many distinct patterns", () => {
    for (let i = 0; i < 1200; i++) {
      expect(matchesBranchFilter(`b${i}`, `b${i}`)).toBe(true);
    }
  });
});

describe("matchesBranchFilter: empty branch", () => {
  it("only * or blank patterns match an empty branch", () => {
    expect(matchesBranchFilter("*", "")).toBe(true);
    expect(matchesBranchFilter("main", "")).toBe(false);
    expect(matchesBranchFilter("!main", "")).toBe(true);
  });
});

describe("branchFilterTerms", () => {
  it("splits on whitespace and drops empty terms", () => {
    expect(branchFilterTerms(" main  !x\tfeat/* ")).toEqual(["main", "!x", "feat/*"]);
    expect(branchFilterTerms("")).toEqual([]);
    expect(branchFilterTerms(null)).toEqual([]);
    expect(branchFilterTerms(undefined)).toEqual([]);
  });
});

describe("branchFilterProblem", () => {
  it.each([
    null,
    undefined,
    "",
    "  ",
    "*",
    "main",
    "!production",
    "main features/*",
    "stages/* !stages/production",
    "v* !v1.*",
    "wow!",
  ])("accepts %j", (pattern) => {
    expect(branchFilterProblem(pattern)).toBeUndefined();
  });

  it("rejects an empty negation", () => {
    expect(branchFilterProblem("!")).toMatch(/empty negation "!"/);
    expect(branchFilterProblem("main ! develop")).toMatch(/empty negation/);
    expect(branchFilterProblem("main !")).toMatch(/!branch-name/);
  });

  it("rejects a double negation", () => {
    expect(branchFilterProblem("!!main")).toMatch(/"!!main" with more than one leading "!"/);
  });

  it("rejects control characters", () => {
    expect(branchFilterProblem("main\u0000")).toBe("must not contain control characters");
    expect(branchFilterProblem("a\u001bb")).toBe("must not contain control characters");
  });

  it("accepts tabs and newlines as separators", () => {
    expect(branchFilterProblem("main\tdevelop\nrelease/*")).toBeUndefined();
  });

  it("rejects values that are not strings", () => {
    expect(branchFilterProblem(42)).toBe("must be a string of space-separated branch patterns, got number 42");
    expect(branchFilterProblem(true)).toMatch(/got boolean true/);
    expect(branchFilterProblem(["main"])).toMatch(/got a list/);
    expect(branchFilterProblem({ a: 1 })).toMatch(/got an object/);
  });
});

describe("matchesBranchFilter on hostile patterns", () => {
  it("answers a pattern that stalls a backtracking regex at once (issue 13)", () => {
    const started = Date.now();
    expect(matchesBranchFilter("*a*a*a*a*a*a*a*a*a*a*a*a*b", "a".repeat(36))).toBe(false);
    expect(matchesBranchFilter(`${"*a".repeat(200)}*b`, "a".repeat(50_000))).toBe(false);
    expect(Date.now() - started).toBeLessThan(500);
  });
});
