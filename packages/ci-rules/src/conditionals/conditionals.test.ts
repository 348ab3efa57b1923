import type { BuildContext } from "./build-context.js";
import { conditionProblem, evaluateCondition } from "./conditionals.js";

function context(overrides: Partial<BuildContext> = {}): BuildContext {
  return {
    branch: "main",
    commit: "0123456789abcdef0123456789abcdef01234567",
    message: "Fix the flaky test [deploy]",
    source: "webhook",
    sourceEvent: "push",
    sourceAction: null,
    tag: null,
    env: { DEPLOY: "yes", EMPTY: "" },
    pullRequest: null,
    creator: { id: "user-1", name: "Ada", email: "ada@example.com" },
    author: { name: "Grace", email: "grace@example.com" },
    pipeline: { slug: "web", defaultBranch: "main", id: "pipeline-1" },
    organization: { slug: "acme", id: "org-1" },
    ...overrides,
  };
}

const pullRequest = {
  id: "42",
  baseBranch: "main",
  draft: true,
  labels: ["deploy", "ui"],
  repository: "https://github.com/acme/web.git",
  fork: false,
};

function value(expression: string, ctx: BuildContext = context()): boolean {
  const result = evaluateCondition(expression, ctx);
  if (!result.ok) throw new Error(`${expression}: ${result.error}`);
  return result.value;
}

function failure(expression: string, ctx: BuildContext = context()): string {
  const result = evaluateCondition(expression, ctx);
  if (result.ok) throw new Error(`${expression} evaluated to ${result.value}`);
  return result.error;
}

describe("evaluateCondition: variables", () => {
  const ctx = context({
    id: "build-1",
    number: 7,
    tag: "v1.2.0",
    pullRequest,
  });

  it.each<[string, boolean]>([
    ['build.branch == "main"', true],
    ['build.commit == "0123456789abcdef0123456789abcdef01234567"', true],
    ["build.message =~ /\\[deploy\\]/", true],
    ['build.source == "webhook"', true],
    ['build.tag == "v1.2.0"', true],
    ['build.id == "build-1"', true],
    ["build.number == 7", true],
    ['build.pull_request.id == "42"', true],
    ['build.pull_request.base_branch == "main"', true],
    ["build.pull_request.draft == true", true],
    ['build.pull_request.labels includes "ui"', true],
    ['build.creator.id == "user-1"', true],
    ['build.creator.name == "Ada"', true],
    ['build.creator.email == "ada@example.com"', true],
    ['build.author.name == "Grace"', true],
    ['build.author.email == "grace@example.com"', true],
    ['build.env("DEPLOY") == "yes"', true],
    ['pipeline.slug == "web"', true],
    ['pipeline.id == "pipeline-1"', true],
    ['pipeline.default_branch == "main"', true],
    ['organization.slug == "acme"', true],
    ['organization.id == "org-1"', true],
  ])("%s", (expression, expected) => {
    expect(value(expression, ctx)).toBe(expected);
  });

  it("reads values a build does not have as null", () => {
    const bare = context({ creator: null, author: null });
    for (const name of [
      "build.tag",
      "build.id",
      "build.number",
      "build.pull_request.id",
      "build.pull_request.base_branch",
      "build.pull_request.draft",
      "build.creator.id",
      "build.creator.name",
      "build.creator.email",
      "build.author.name",
      "build.author.email",
      'build.env("MISSING")',
    ]) {
      expect(value(`${name} == null`, bare)).toBe(true);
    }
  });

  it("reads a missing pull request's labels as an empty list", () => {
    expect(value('build.pull_request.labels includes "deploy"')).toBe(false);
  });

  it("distinguishes an empty env value from a missing one", () => {
    expect(value('build.env("EMPTY") == ""')).toBe(true);
    expect(value('build.env("EMPTY") == null')).toBe(false);
  });

  it("does not read inherited properties as env variables", () => {
    expect(value('build.env("constructor") == null')).toBe(true);
    expect(value('build.env("__proto__") == null')).toBe(true);
  });

  it("takes the env variable name from any string expression", () => {
    expect(
      value('build.env(build.env("NAME_OF_VAR")) == "yes"', context({ env: { NAME_OF_VAR: "X", X: "yes" } })),
    ).toBe(true);
  });
});

describe("evaluateCondition: == and !=", () => {
  it.each<[string, boolean]>([
    ['"a" == "a"', true],
    ['"a" == "b"', false],
    ['"a" != "b"', true],
    ["'a' == \"a\"", true],
    ["1 == 1", true],
    ["1 != 2", true],
    ["-1 == -1", true],
    ['1 == "1"', false],
    ["true == true", true],
    ["true != false", true],
    ["null == null", true],
    ['null == ""', false],
    ["null == false", false],
    ["0 == false", false],
    ["build.branch == pipeline.default_branch", true],
    ["build.pull_request.labels == build.pull_request.labels", true],
    ['build.pull_request.labels == "deploy"', false],
  ])("%s → %s", (expression, expected) => {
    expect(value(expression, context({ pullRequest }))).toBe(expected);
  });

  it("compares strings case-sensitively", () => {
    expect(value('build.branch == "Main"')).toBe(false);
  });
});

describe("evaluateCondition: =~ and !~", () => {
  it.each<[string, boolean]>([
    ["build.branch =~ /^ma/", true],
    ["build.branch =~ /^MA/", false],
    ["build.branch =~ /^MA/i", true],
    ["build.branch !~ /^ma/", false],
    ["build.branch !~ /^feature\\//", true],
    ["build.message =~ /^Fix.*deploy/", true],
    ["build.message =~ /flaky\\s+test/", true],
    ['build.env("DEPLOY") =~ /^y/', true],
  ])("%s → %s", (expression, expected) => {
    expect(value(expression)).toBe(expected);
  });

  it("supports the m and s flags", () => {
    const ctx = context({ message: "first\nsecond" });
    expect(value("build.message =~ /^second$/", ctx)).toBe(false);
    expect(value("build.message =~ /^second$/m", ctx)).toBe(true);
    expect(value("build.message =~ /first.second/", ctx)).toBe(false);
    expect(value("build.message =~ /first.second/s", ctx)).toBe(true);
  });

  it("never matches null", () => {
    expect(value("build.tag =~ /.*/")).toBe(false);
    expect(value("build.tag !~ /.*/")).toBe(true);
    expect(value('build.env("MISSING") =~ /x/')).toBe(false);
  });

  it("matches tags once there is one", () => {
    expect(value("build.tag =~ /^v[0-9]+\\./", context({ tag: "v12.0" }))).toBe(true);
  });

  it("gives the same answer when evaluated again (no stateful regex)", () => {
    for (let i = 0; i < 3; i++) expect(value("build.branch =~ /main/i")).toBe(true);
  });

  it("refuses a non-string left side", () => {
    expect(failure("build.number =~ /7/", context({ number: 7 }))).toBe(
      '"=~" needs a string on its left, got the number 7 at column 14',
    );
    expect(failure("true !~ /t/")).toBe('"!~" needs a string on its left, got true at column 6');
  });
});

describe("evaluateCondition: includes", () => {
  const ctx = context({ pullRequest });

  it.each<[string, boolean]>([
    ['build.pull_request.labels includes "deploy"', true],
    ['build.pull_request.labels includes "Deploy"', false],
    ['build.pull_request.labels includes "missing"', false],
    ["build.pull_request.labels includes 1", false],
    ["build.pull_request.labels includes null", false],
    ['build.pull_request.labels includes build.env("LABEL")', true],
    ['!(build.pull_request.labels includes "ui")', false],
  ])("%s → %s", (expression, expected) => {
    expect(value(expression, { ...ctx, env: { LABEL: "ui" } })).toBe(expected);
  });

  it("treats a null list as empty", () => {
    expect(value('build.env("LIST") includes "x"')).toBe(false);
  });

  it("refuses a string on the left", () => {
    expect(failure('build.branch includes "ma"')).toBe(
      '"includes" needs a list on its left, got the string "main" at column 14; for example build.pull_request.labels includes "deploy"',
    );
  });
});

describe("evaluateCondition: !, && and ||", () => {
  it.each<[string, boolean]>([
    ["true && true", true],
    ["true && false", false],
    ["false && true", false],
    ["false && false", false],
    ["true || false", true],
    ["false || true", true],
    ["false || false", false],
    ["true || true", true],
    ["!true", false],
    ["!false", true],
    ["!!true", true],
    ["!null", true],
    ["null || true", true],
    ["null && true", false],
    ["true || false && false", true],
    ["(true || false) && false", false],
    ["false && false || true", true],
    ["false && (false || true)", false],
    ["!false && false", false],
    ["!(false && false)", true],
  ])("%s → %s", (expression, expected) => {
    expect(value(expression)).toBe(expected);
  });

  it("short-circuits && so the right side is not evaluated", () => {
    expect(value('false && build.branch includes "x"')).toBe(false);
  });

  it("short-circuits || so the right side is not evaluated", () => {
    expect(value('true || build.branch includes "x"')).toBe(true);
  });

  it("treats a missing pull request's draft flag as false", () => {
    expect(value("!build.pull_request.draft")).toBe(true);
    expect(value("!build.pull_request.draft", context({ pullRequest }))).toBe(false);
    expect(value("!build.pull_request.draft", context({ pullRequest: { ...pullRequest, draft: null } }))).toBe(true);
  });

  it("reads a webhook build's source event and action, and its pull request's repository and fork", () => {
    const opened = context({ pullRequest, sourceEvent: "pull_request", sourceAction: "opened" });
    expect(value('build.source_event == "pull_request" && build.source_action == "opened"', opened)).toBe(true);
    expect(value('build.source_event == "push"', opened)).toBe(false);
    expect(value("build.source_action == null")).toBe(true);
    expect(value("build.pull_request.repository =~ /acme\\/web/", opened)).toBe(true);
    expect(value("build.pull_request.repository.fork", opened)).toBe(false);
    expect(value("!build.pull_request.repository.fork")).toBe(true);
  });

  it.each([
    ["!build.branch", '"!" needs true, false or null, got the string "main" at column 1'],
    ["build.branch && true", '"&&" needs true, false or null, got the string "main" at column 14'],
    ["false || 1", '"||" needs true, false or null, got the number 1 at column 7'],
    ['true && build.env("DEPLOY")', '"&&" needs true, false or null, got the string "yes" at column 6'],
  ])("refuses non-booleans: %s", (expression, message) => {
    expect(failure(expression)).toBe(
      `${message}; compare the value instead, for example build.tag != null or build.branch == "main"`,
    );
  });
});

describe("evaluateCondition: results", () => {
  it("takes null as false", () => {
    expect(value("null")).toBe(false);
    expect(value("build.tag")).toBe(false);
  });

  it("refuses a result that is not a boolean", () => {
    expect(failure("build.branch")).toBe(
      'the condition must be true or false, got the string "main" at column 1; compare the value instead, for example build.tag != null or build.branch == "main"',
    );
    expect(failure("build.pull_request.labels", context({ pullRequest }))).toMatch(
      /^the condition must be true or false, got a list \["deploy","ui"\] at column 1/,
    );
    expect(failure("3")).toMatch(/^the condition must be true or false, got the number 3 at column 1/);
  });

  it("returns syntax errors as results, never throwing", () => {
    expect(evaluateCondition("(", context())).toEqual({
      ok: false,
      error: "unexpected end of expression at column 2; expected a value",
    });
    expect(evaluateCondition("build.nope", context())).toEqual({
      ok: false,
      error: "unknown variable build.nope at column 1",
    });
  });

  it("evaluates documented examples", () => {
    expect(value('build.branch == pipeline.default_branch && build.source != "schedule"')).toBe(true);
    expect(value("build.message !~ /skip tests/ && build.pull_request.draft != true")).toBe(true);
    expect(value("build.tag != null || build.branch =~ /^release\\//", context({ branch: "release/1.0" }))).toBe(true);
    expect(
      value('// deploy only from main\nbuild.branch == "main"\n  && build.env("DEPLOY") == "yes" // when asked'),
    ).toBe(true);
  });

  it("gives the same result from a cached parse", () => {
    const ctxA = context({ branch: "a" });
    const ctxB = context({ branch: "b" });
    expect(value('build.branch == "a"', ctxA)).toBe(true);
    expect(value('build.branch == "a"', ctxB)).toBe(false);
  });
});

describe("conditionProblem", () => {
  it("accepts valid expressions", () => {
    expect(conditionProblem('build.branch == "main"')).toBeUndefined();
    expect(conditionProblem('build.pull_request.labels includes "x" || build.tag =~ /^v/')).toBeUndefined();
  });

  it("does not evaluate: type mismatches only show when evaluating", () => {
    expect(conditionProblem("!build.branch")).toBeUndefined();
  });

  it("reports syntax problems with their position", () => {
    expect(conditionProblem('(build.branch == "main"))')).toBe(
      'unexpected ")" at column 25; there is no "(" for it to close',
    );
    expect(conditionProblem("build.brnch == 1")).toBe("unknown variable build.brnch at column 1");
  });

  it.each([
    [1, "must be a string, got number"],
    [null, "must be a string, got null"],
    [["a"], "must be a string, got a list"],
    [{}, "must be a string, got object"],
  ])("refuses a non-string %j", (input, message) => {
    expect(conditionProblem(input)).toBe(message);
  });
});

describe("regular expressions run in linear time", () => {
  it("matches a catastrophic pattern against a long message quickly (RE2, not backtracking)", () => {
    const message = `${"a".repeat(100_000)}!`;
    const started = performance.now();
    const result = evaluateCondition("build.message =~ /^(a+)+$/", context({ message }));
    expect(result).toEqual({ ok: true, value: false });
    // A backtracking engine takes longer than the age of the universe here; RE2 takes milliseconds.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("keeps the i, m and s flags", () => {
    const ctx = context({ message: "first\nSecond line" });
    expect(evaluateCondition("build.message =~ /^second/im", ctx)).toEqual({ ok: true, value: true });
    expect(evaluateCondition("build.message =~ /^second/i", ctx)).toEqual({ ok: true, value: false });
    expect(evaluateCondition("build.message =~ /first.second/is", ctx)).toEqual({ ok: true, value: true });
    expect(evaluateCondition("build.message =~ /first.second/i", ctx)).toEqual({ ok: true, value: false });
  });
});
