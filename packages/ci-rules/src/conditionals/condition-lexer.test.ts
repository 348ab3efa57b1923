import {
  ConditionError,
  describePosition,
  describeProblem,
  describeToken,
  type Token,
  tokenize,
} from "./condition-lexer.js";

function kinds(source: string): string[] {
  return tokenize(source).map((t) => `${t.kind}:${t.text}`);
}

function lexError(source: string): string {
  try {
    tokenize(source);
  } catch (error) {
    if (error instanceof ConditionError) return describeProblem(source, error);
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(source)} to fail`);
}

describe("tokenize", () => {
  it("reads dotted identifiers as one token", () => {
    expect(kinds("build.pull_request.base_branch")).toEqual(["identifier:build.pull_request.base_branch", "end:"]);
  });

  it("stops an identifier at a dot that is not followed by a name", () => {
    expect(() => tokenize("build.")).toThrow(ConditionError);
    expect(lexError("build. == 1")).toBe('unexpected character "." at column 6');
  });

  it("reads every operator, longest first", () => {
    expect(kinds("== != =~ !~ && || !")).toEqual([
      "operator:==",
      "operator:!=",
      "operator:=~",
      "operator:!~",
      "operator:&&",
      "operator:||",
      "operator:!",
      "end:",
    ]);
  });

  it("reads ! directly before a name or parenthesis", () => {
    expect(kinds("!a")).toEqual(["operator:!", "identifier:a", "end:"]);
    expect(kinds("!(a)")).toEqual(["operator:!", "punctuation:(", "identifier:a", "punctuation:)", "end:"]);
  });

  it("reads punctuation", () => {
    expect(kinds("( , )")).toEqual(["punctuation:(", "punctuation:,", "punctuation:)", "end:"]);
  });

  it("reads integers, including negative ones", () => {
    const tokens = tokenize("42 -7 0");
    expect(tokens.map((t) => (t.kind === "integer" ? t.value : t.kind))).toEqual([42, -7, 0, "end"]);
  });

  it("refuses decimals and numbers glued to letters", () => {
    expect(lexError("x == 1.5")).toBe("unexpected decimal number at column 6; only integers are supported");
    expect(lexError("x == 12ab")).toBe(
      'unexpected character "a" at column 8; a number must not be followed by letters',
    );
  });

  it("reads double- and single-quoted strings with escapes", () => {
    const [a, b] = tokenize(`"a\\"b\\n" 'c\\'d\\\\'`);
    expect(a).toMatchObject({ kind: "string", value: 'a"b\n' });
    expect(b).toMatchObject({ kind: "string", value: "c'd\\" });
  });

  it("keeps the other quote unescaped inside a string", () => {
    expect(tokenize(`"it's"`)[0]).toMatchObject({ value: "it's" });
    expect(tokenize(`'say "hi"'`)[0]).toMatchObject({ value: 'say "hi"' });
  });

  it("keeps unknown escapes with their backslash", () => {
    expect(tokenize(String.raw`"\d+\t"`)[0]).toMatchObject({ value: "\\d+\t" });
  });

  it("reports unterminated strings at their start", () => {
    expect(lexError('build.branch == "main')).toBe('unterminated string starting at column 17; close it with "');
    expect(lexError("x == 'a")).toBe("unterminated string starting at column 6; close it with '");
  });

  it("reads regular expressions with flags", () => {
    expect(tokenize("/^v[0-9]+\\.0$/im")[0]).toMatchObject({ kind: "regex", source: "^v[0-9]+\\.0$", flags: "im" });
  });

  it("lets escaped slashes and slashes in classes stay inside a regular expression", () => {
    expect(tokenize("/a\\/b/")[0]).toMatchObject({ source: "a\\/b" });
    expect(tokenize("/a[/]b/")[0]).toMatchObject({ source: "a[/]b" });
  });

  it("refuses unknown and repeated flags", () => {
    expect(lexError("x =~ /a/g")).toBe('unsupported regular expression flag "g" at column 9; the flags are i, m and s');
    expect(lexError("x =~ /a/ii")).toBe('repeated regular expression flag "i" at column 10');
  });

  it("reports unterminated regular expressions", () => {
    expect(lexError("x =~ /abc")).toBe("unterminated regular expression starting at column 6; close it with /");
    expect(lexError("x =~ /abc\n/")).toBe(
      "unterminated regular expression starting at line 1, column 6; close it with /",
    );
  });

  it("skips // comments to the end of the line", () => {
    expect(kinds("a // a comment == )\n&& b // more")).toEqual(["identifier:a", "operator:&&", "identifier:b", "end:"]);
  });

  it("ends with an end token at the end of the source", () => {
    expect(tokenize("ab  ").at(-1)).toEqual({ kind: "end", text: "", offset: 4 });
    expect(tokenize("")).toEqual([{ kind: "end", text: "", offset: 0 }]);
  });

  it.each([
    ["x = 1", 'unexpected character "=" at column 3; use "==" to compare'],
    ["a & b", 'unexpected character "&" at column 3; use "&&" for "and"'],
    ["a | b", 'unexpected character "|" at column 3; use "||" for "or"'],
    ["a < 1", 'unexpected character "<" at column 3; only ==, !=, =~, !~ and includes compare values'],
    ["x == @", 'unexpected character "@" at column 6'],
  ])("explains a stray character in %j", (source, message) => {
    expect(lexError(source)).toBe(message);
  });
});

describe("describePosition", () => {
  it("gives a 1-based column on one line", () => {
    expect(describePosition("abc", 0)).toBe("column 1");
    expect(describePosition("abc", 2)).toBe("column 3");
  });

  it("gives line and column across lines", () => {
    expect(describePosition("ab\ncd\nef", 4)).toBe("line 2, column 2");
    expect(describePosition("ab\ncd\nef", 6)).toBe("line 3, column 1");
  });
});

describe("describeToken", () => {
  it.each<[Token, string]>([
    [{ kind: "end", text: "", offset: 0 }, "end of expression"],
    [{ kind: "string", value: "a", text: '"a"', offset: 0 }, 'string "a"'],
    [{ kind: "integer", value: 1, text: "1", offset: 0 }, "number 1"],
    [{ kind: "regex", source: "a", flags: "", text: "/a/", offset: 0 }, "regular expression /a/"],
    [{ kind: "punctuation", text: ")", offset: 0 }, '")"'],
    [{ kind: "identifier", text: "includes", offset: 0 }, '"includes"'],
  ])("%j → %s", (token, text) => {
    expect(describeToken(token)).toBe(text);
  });
});
