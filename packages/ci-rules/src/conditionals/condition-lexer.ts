/**
 * The tokenizer of Buildkite conditional expressions (`if:`), docs/compatibility.md#pipeline-yaml. Hand-written so that every
 * error can name the exact column a person has to look at.
 */

/** The two- and one-character operators of the language. */
export type OperatorText = "==" | "!=" | "=~" | "!~" | "&&" | "||" | "!";

/** One token; `offset` is the 0-based index of its first character in the expression. */
export type Token =
  | { kind: "identifier"; text: string; offset: number }
  | { kind: "string"; value: string; text: string; offset: number }
  | { kind: "integer"; value: number; text: string; offset: number }
  | { kind: "regex"; source: string; flags: string; text: string; offset: number }
  | { kind: "operator"; text: OperatorText; offset: number }
  | { kind: "punctuation"; text: "(" | ")" | ","; offset: number }
  | { kind: "end"; text: ""; offset: number };

/** A syntax or evaluation problem at a position of the expression. */
export class ConditionError extends Error {
  /** `offset` is 0-based; the message gets the human position appended by `describeProblem`. */
  constructor(
    readonly problem: string,
    readonly offset: number,
    readonly hint?: string,
  ) {
    super(problem);
  }
}

/** Regular expression flags accepted after `/…/`. `g` and `y` are refused: they make `test` stateful. */
export const REGEX_FLAGS = "ims";

/** "column 14", or "line 2, column 3" for multi-line expressions (YAML block scalars), 1-based. */
export function describePosition(source: string, offset: number): string {
  if (!source.includes("\n")) return `column ${offset + 1}`;
  const before = source.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - (before.lastIndexOf("\n") + 1) + 1;
  return `line ${line}, column ${column}`;
}

/** The full, actionable message of a ConditionError: `unexpected ")" at column 14; expected a value`. */
export function describeProblem(source: string, error: ConditionError): string {
  const at = `${error.problem} at ${describePosition(source, error.offset)}`;
  return error.hint === undefined ? at : `${at}; ${error.hint}`;
}

/** How a token is named in an error message. */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case "end":
      return "end of expression";
    case "string":
      return `string ${token.text}`;
    case "integer":
      return `number ${token.text}`;
    case "regex":
      return `regular expression ${token.text}`;
    default:
      return `"${token.text}"`;
  }
}

const IDENTIFIER_START = /[A-Za-z_]/;
const IDENTIFIER_PART = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const WHITESPACE = /[ \t\r\n]/;

const STRING_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", '"': '"', "'": "'" };

/** Splits an expression into tokens, ending with one `end` token. Throws ConditionError on bad input. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const at = (index: number): string => source.charAt(index);
  while (i < source.length) {
    const c = at(i);
    if (WHITESPACE.test(c)) {
      i++;
      continue;
    }
    if (c === "/" && at(i + 1) === "/") {
      // A `//` comment runs to the end of the line; an empty regex literal cannot be written, which costs nothing.
      while (i < source.length && at(i) !== "\n") i++;
      continue;
    }
    const start = i;
    if (IDENTIFIER_START.test(c)) {
      i = readIdentifier(source, i);
      tokens.push({ kind: "identifier", text: source.slice(start, i), offset: start });
      continue;
    }
    if (DIGIT.test(c) || (c === "-" && DIGIT.test(at(i + 1)))) {
      i = readInteger(source, i);
      const text = source.slice(start, i);
      tokens.push({ kind: "integer", value: Number(text), text, offset: start });
      continue;
    }
    if (c === '"' || c === "'") {
      const { value, end } = readString(source, i);
      i = end;
      tokens.push({ kind: "string", value, text: source.slice(start, i), offset: start });
      continue;
    }
    if (c === "/") {
      const regex = readRegex(source, i);
      i = regex.end;
      tokens.push({
        kind: "regex",
        source: regex.source,
        flags: regex.flags,
        text: source.slice(start, i),
        offset: start,
      });
      continue;
    }
    const two = source.slice(i, i + 2);
    if (two === "==" || two === "!=" || two === "=~" || two === "!~" || two === "&&" || two === "||") {
      tokens.push({ kind: "operator", text: two, offset: start });
      i += 2;
      continue;
    }
    if (c === "!") {
      tokens.push({ kind: "operator", text: "!", offset: start });
      i++;
      continue;
    }
    if (c === "(" || c === ")" || c === ",") {
      tokens.push({ kind: "punctuation", text: c, offset: start });
      i++;
      continue;
    }
    throw new ConditionError(`unexpected character "${c}"`, start, SINGLE_CHARACTER_HINTS[c]);
  }
  tokens.push({ kind: "end", text: "", offset: source.length });
  return tokens;
}

/** Hints for characters people type by habit from other languages. */
const SINGLE_CHARACTER_HINTS: Record<string, string> = {
  "=": 'use "==" to compare',
  "&": 'use "&&" for "and"',
  "|": 'use "||" for "or"',
  "<": "only ==, !=, =~, !~ and includes compare values",
  ">": "only ==, !=, =~, !~ and includes compare values",
  "[": "list literals are not supported; use includes on a list variable such as build.pull_request.labels",
  "`": "strings are quoted with ' or \"",
};

/** A dotted path such as `build.pull_request.id` is one token: segments never stand alone in this language. */
function readIdentifier(source: string, start: number): number {
  let i = start;
  for (;;) {
    while (i < source.length && IDENTIFIER_PART.test(source.charAt(i))) i++;
    if (source.charAt(i) === "." && IDENTIFIER_START.test(source.charAt(i + 1))) {
      i++;
      continue;
    }
    return i;
  }
}

function readInteger(source: string, start: number): number {
  let i = source.charAt(start) === "-" ? start + 1 : start;
  while (i < source.length && DIGIT.test(source.charAt(i))) i++;
  if (source.charAt(i) === "." && DIGIT.test(source.charAt(i + 1))) {
    throw new ConditionError("unexpected decimal number", start, "only integers are supported");
  }
  if (IDENTIFIER_START.test(source.charAt(i))) {
    throw new ConditionError(
      `unexpected character "${source.charAt(i)}"`,
      i,
      "a number must not be followed by letters",
    );
  }
  return i;
}

function readString(source: string, start: number): { value: string; end: number } {
  const quote = source.charAt(start);
  let value = "";
  let i = start + 1;
  while (i < source.length) {
    const c = source.charAt(i);
    if (c === quote) return { value, end: i + 1 };
    if (c === "\\" && i + 1 < source.length) {
      const next = source.charAt(i + 1);
      // Unknown escapes keep their backslash, so "\d" written for a regex-like value is not silently changed.
      value += STRING_ESCAPES[next] ?? `\\${next}`;
      i += 2;
      continue;
    }
    value += c;
    i++;
  }
  throw new ConditionError("unterminated string starting", start, `close it with ${quote}`);
}

function readRegex(source: string, start: number): { source: string; flags: string; end: number } {
  let i = start + 1;
  let inClass = false;
  for (;;) {
    if (i >= source.length || source.charAt(i) === "\n") {
      throw new ConditionError("unterminated regular expression starting", start, "close it with /");
    }
    const c = source.charAt(i);
    if (c === "\\") {
      i += 2;
      continue;
    }
    // A "/" inside a character class ([/]) does not end the literal, as in JavaScript.
    if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    else if (c === "/" && !inClass) break;
    i++;
  }
  const body = source.slice(start + 1, i);
  i++;
  const flagsStart = i;
  while (i < source.length && /[A-Za-z]/.test(source.charAt(i))) {
    const flag = source.charAt(i);
    if (!REGEX_FLAGS.includes(flag)) {
      throw new ConditionError(`unsupported regular expression flag "${flag}"`, i, "the flags are i, m and s");
    }
    if (source.slice(flagsStart, i).includes(flag)) {
      throw new ConditionError(`repeated regular expression flag "${flag}"`, i);
    }
    i++;
  }
  return { source: body, flags: source.slice(flagsStart, i), end: i };
}
