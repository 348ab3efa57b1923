import { ConditionError, describeProblem } from "./condition-lexer.js";
import { type ConditionNode, parseCondition } from "./condition-parser.js";

/** A compact rendering of a tree, so precedence is visible at a glance. */
function show(node: ConditionNode): string {
  switch (node.kind) {
    case "literal":
      return JSON.stringify(node.value);
    case "variable":
      return node.name;
    case "call":
      return `${node.name}(${node.args.map(show).join(", ")})`;
    case "not":
      return `!${show(node.operand)}`;
    case "logical":
    case "compare":
      return `(${show(node.left)} ${node.op} ${show(node.right)})`;
    case "match":
      return `(${show(node.left)} ${node.op} ${node.regex})`;
    case "includes":
      return `(${show(node.left)} includes ${show(node.right)})`;
  }
}

function tree(source: string): string {
  return show(parseCondition(source));
}

function parseError(source: string): string {
  try {
    parseCondition(source);
  } catch (error) {
    if (error instanceof ConditionError) return describeProblem(source, error);
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(source)} to fail`);
}

describe("parseCondition: values", () => {
  it.each([
    ['"main"', '"main"'],
    ["'main'", '"main"'],
    ["12", "12"],
    ["-3", "-3"],
    ["true", "true"],
    ["false", "false"],
    ["null", "null"],
    ["build.branch", "build.branch"],
    ['build.env("FOO")', 'build.env("FOO")'],
    ["((build.branch))", "build.branch"],
  ])("%s", (source, expected) => {
    expect(tree(source)).toBe(expected);
  });
});

describe("parseCondition: operators and precedence", () => {
  it.each([
    ['build.branch == "main"', '(build.branch == "main")'],
    ['build.branch != "main"', '(build.branch != "main")'],
    ["build.branch =~ /^m/", "(build.branch =~ /^m/)"],
    ["build.branch !~ /^m/i", "(build.branch !~ /^m/i)"],
    ['build.pull_request.labels includes "x"', '(build.pull_request.labels includes "x")'],
    ["true && false", "(true && false)"],
    ["true || false", "(true || false)"],
    ["!true", "!true"],
    ["!!true", "!!true"],
  ])("%s", (source, expected) => {
    expect(tree(source)).toBe(expected);
  });

  it("&& binds tighter than ||", () => {
    expect(tree("true || false && null")).toBe("(true || (false && null))");
    expect(tree("true && false || null")).toBe("((true && false) || null)");
  });

  it("comparisons bind tighter than &&", () => {
    expect(tree('build.branch == "a" && build.tag != null')).toBe('((build.branch == "a") && (build.tag != null))');
  });

  it("! binds tighter than comparisons", () => {
    expect(tree("!build.pull_request.draft == true")).toBe("(!build.pull_request.draft == true)");
  });

  it("&& and || are left-associative", () => {
    expect(tree("true && false && null")).toBe("((true && false) && null)");
    expect(tree("true || false || null")).toBe("((true || false) || null)");
  });

  it("parentheses override precedence", () => {
    expect(tree("(true || false) && null")).toBe("((true || false) && null)");
    expect(tree('!(build.branch == "main")')).toBe('!(build.branch == "main")');
  });

  it("includes takes any value on the right", () => {
    expect(tree('build.pull_request.labels includes build.env("L")')).toBe(
      '(build.pull_request.labels includes build.env("L"))',
    );
  });

  it("accepts the group form the pipeline parser writes", () => {
    expect(tree('(build.branch == "main") && (build.tag == null)')).toBe(
      '((build.branch == "main") && (build.tag == null))',
    );
  });

  it("ignores comments and line breaks", () => {
    expect(tree('build.branch == "main" // only main\n  || build.tag != null // or tags')).toBe(
      '((build.branch == "main") || (build.tag != null))',
    );
  });
});

describe("parseCondition: errors", () => {
  it.each([
    ['(build.branch == "main"))', 'unexpected ")" at column 25; there is no "(" for it to close'],
    ['build.branch == "main")', 'unexpected ")" at column 23; there is no "(" for it to close'],
    ["build.branch == ", "unexpected end of expression at column 17; expected a value"],
    ["build.branch ==)", 'unexpected ")" at column 16; expected a value'],
    ['(build.branch == "main"', 'unexpected end of expression at column 24; expected ")" to close the "(" at column 1'],
    ["()", 'unexpected ")" at column 2; expected a value'],
    ["&& true", 'unexpected "&&" at column 1; expected a value'],
    ["true &&", "unexpected end of expression at column 8; expected a value"],
    ["true || || false", 'unexpected "||" at column 9; expected a value'],
    ['build.branch "main"', 'unexpected string "main" at column 14; join conditions with && or ||'],
    ["true false", 'unexpected "false" at column 6; join conditions with && or ||'],
    ['build.branch == "a" == "b"', 'unexpected "==" at column 21; comparisons do not chain; join them with && or ||'],
    ["build.branch =~ /a/ =~ /b/", 'unexpected "=~" at column 21; comparisons do not chain; join them with && or ||'],
    ["build.x == 1", "unknown variable build.x at column 1"],
    ["branch == 1", "unknown variable branch at column 1"],
    ["true == build.pipeline.slug", "unknown variable build.pipeline.slug at column 9"],
    ['env("X")', 'unknown function env() at column 1; the only function is build.env("NAME")'],
    ["build.env == 1", 'build.env is a function at column 1; write build.env("NAME")'],
    ["build.env()", 'build.env() takes one argument, got 0 at column 1; write build.env("NAME")'],
    ['build.env("A", "B")', 'build.env() takes one argument, got 2 at column 1; write build.env("NAME")'],
    ['build.env("A"', 'unexpected end of expression at column 14; expected ")" to close the "(" at column 10'],
    [
      'build.branch =~ "main"',
      'unexpected string "main" at column 17; "=~" needs a regular expression on its right, such as /^main$/',
    ],
    [
      "build.branch !~ build.tag",
      'unexpected "build.tag" at column 17; "!~" needs a regular expression on its right, such as /^main$/',
    ],
    [
      "/main/ =~ build.branch",
      "unexpected regular expression /main/ at column 1; regular expressions only go on the right of =~ or !~",
    ],
    [
      "build.branch == /main/",
      "unexpected regular expression /main/ at column 17; regular expressions only go on the right of =~ or !~",
    ],
    [
      "build.branch =~ /a(/",
      "invalid regular expression /a(/ at column 17; missing closing ): `a(` (RE2 syntax: no look-arounds or back-references)",
    ],
    [
      "build.branch =~ /^(?!main)/",
      "invalid regular expression /^(?!main)/ at column 17; invalid or unsupported Perl syntax: `(?!` (RE2 syntax: no look-arounds or back-references)",
    ],
    ["build.branch =~ /[a/", "unterminated regular expression starting at column 17; close it with /"],
    ["includes", 'unexpected "includes" at column 1; expected a value'],
    ["build.pull_request.labels includes", "unexpected end of expression at column 35; expected a value"],
    [
      'build.pull_request.labels includes "a" includes "b"',
      'unexpected "includes" at column 40; comparisons do not chain; join them with && or ||',
    ],
    ["", 'empty condition at column 1; write an expression such as build.branch == "main"'],
    ["  // just a comment", 'empty condition at column 1; write an expression such as build.branch == "main"'],
    ["!", "unexpected end of expression at column 2; expected a value"],
    ["build.branch ==\n  )", 'unexpected ")" at line 2, column 3; expected a value'],
  ])("%j", (source, message) => {
    expect(parseError(source)).toBe(message);
  });

  it("refuses absurd nesting instead of overflowing the stack", () => {
    expect(parseError(`${"(".repeat(200)}true${")".repeat(200)}`)).toMatch(
      /^expression nested too deeply at column \d+$/,
    );
    expect(parseError(`${"!".repeat(200)}true`)).toMatch(/^expression nested too deeply at column \d+$/);
  });

  it("accepts reasonable nesting", () => {
    expect(tree(`${"(".repeat(30)}true${")".repeat(30)}`)).toBe("true");
  });

  it("does not treat inherited object properties as variables or functions", () => {
    expect(parseError("constructor")).toBe("unknown variable constructor at column 1");
    expect(parseError("toString()")).toBe(
      'unknown function toString() at column 1; the only function is build.env("NAME")',
    );
  });
});
