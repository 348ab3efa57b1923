/**
 * Recursive-descent parser of Buildkite conditional expressions (docs/compatibility.md#pipeline-yaml).
 *
 * Grammar, loosest binding first (so `!` binds tighter than comparisons, which bind tighter than `&&`, then `||`):
 *
 *     expression := and ( "||" and )*
 *     and        := comparison ( "&&" comparison )*
 *     comparison := unary [ ("==" | "!=") unary | ("=~" | "!~") REGEX | "includes" unary ]
 *     unary      := "!" unary | primary
 *     primary    := STRING | INTEGER | true | false | null | "(" expression ")"
 *                 | VARIABLE | FUNCTION "(" [ expression ( "," expression )* ] ")"
 *
 * Comparisons do not chain (`a == b == c` is an error), regular expressions appear only right of `=~`/`!~`, and
 * variable and function names are checked here, so a mistyped name is reported when the pipeline is saved.
 */
import { RE2JS } from "re2js";
import { ConditionError, describePosition, describeToken, type Token, tokenize } from "./condition-lexer.js";
import {
  CONDITION_FUNCTIONS,
  type ConditionValue,
  isConditionFunction,
  isConditionVariable,
} from "./condition-variables.js";

/** A node of the syntax tree; `offset` is where its operator or first token starts, for error messages. */
export type ConditionNode =
  | { kind: "literal"; value: ConditionValue; offset: number }
  | { kind: "variable"; name: string; offset: number }
  | { kind: "call"; name: string; args: ConditionNode[]; offset: number }
  | { kind: "not"; operand: ConditionNode; offset: number }
  | { kind: "logical"; op: "&&" | "||"; left: ConditionNode; right: ConditionNode; offset: number }
  | { kind: "compare"; op: "==" | "!="; left: ConditionNode; right: ConditionNode; offset: number }
  | { kind: "match"; op: "=~" | "!~"; left: ConditionNode; regex: ConditionRegex; offset: number }
  | { kind: "includes"; left: ConditionNode; right: ConditionNode; offset: number };

/** Deeper nesting than this is refused rather than risking the stack on hostile input. */
const MAX_DEPTH = 64;

/** Parses `source` into a tree. Throws ConditionError with the offending position. */
export function parseCondition(source: string): ConditionNode {
  const tokens = tokenize(source);
  if (tokens.length === 1) {
    throw new ConditionError("empty condition", 0, 'write an expression such as build.branch == "main"');
  }
  const parser = new Parser(tokens, source);
  const node = parser.expression(0);
  const rest = parser.peek();
  if (rest.kind !== "end") throw unexpected(rest, trailingHint(rest));
  return node;
}

function trailingHint(token: Token): string | undefined {
  if (token.kind === "operator" && (token.text === "==" || token.text === "!=" || token.text === "=~")) {
    return "comparisons do not chain; join them with && or ||";
  }
  if (token.kind === "identifier" && token.text === "includes") {
    return "comparisons do not chain; join them with && or ||";
  }
  if (token.kind === "punctuation" && token.text === ")") return 'there is no "(" for it to close';
  return "join conditions with && or ||";
}

function unexpected(token: Token, hint?: string): ConditionError {
  return new ConditionError(`unexpected ${describeToken(token)}`, token.offset, hint);
}

class Parser {
  private index = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly source: string,
  ) {}

  peek(): Token {
    // The token list always ends with an `end` token, and `next` never moves past it.
    return this.tokens[this.index] ?? { kind: "end", text: "", offset: 0 };
  }

  private next(): Token {
    const token = this.peek();
    if (token.kind !== "end") this.index++;
    return token;
  }

  private isOperator(text: string): boolean {
    const token = this.peek();
    return token.kind === "operator" && token.text === text;
  }

  expression(depth: number): ConditionNode {
    if (depth > MAX_DEPTH) throw new ConditionError("expression nested too deeply", this.peek().offset);
    let left = this.and(depth);
    while (this.isOperator("||")) {
      const op = this.next();
      left = { kind: "logical", op: "||", left, right: this.and(depth), offset: op.offset };
    }
    return left;
  }

  private and(depth: number): ConditionNode {
    let left = this.comparison(depth);
    while (this.isOperator("&&")) {
      const op = this.next();
      left = { kind: "logical", op: "&&", left, right: this.comparison(depth), offset: op.offset };
    }
    return left;
  }

  private comparison(depth: number): ConditionNode {
    const left = this.unary(depth);
    const token = this.peek();
    if (token.kind === "operator" && (token.text === "==" || token.text === "!=")) {
      this.next();
      return { kind: "compare", op: token.text, left, right: this.unary(depth), offset: token.offset };
    }
    if (token.kind === "operator" && (token.text === "=~" || token.text === "!~")) {
      this.next();
      const right = this.next();
      if (right.kind !== "regex") {
        throw unexpected(right, `"${token.text}" needs a regular expression on its right, such as /^main$/`);
      }
      return { kind: "match", op: token.text, left, regex: compileRegex(right), offset: token.offset };
    }
    if (token.kind === "identifier" && token.text === "includes") {
      this.next();
      return { kind: "includes", left, right: this.unary(depth), offset: token.offset };
    }
    return left;
  }

  private unary(depth: number): ConditionNode {
    if (this.isOperator("!")) {
      const op = this.next();
      if (depth > MAX_DEPTH) throw new ConditionError("expression nested too deeply", op.offset);
      return { kind: "not", operand: this.unary(depth + 1), offset: op.offset };
    }
    return this.primary(depth);
  }

  private primary(depth: number): ConditionNode {
    const token = this.next();
    switch (token.kind) {
      case "string":
      case "integer":
        return { kind: "literal", value: token.value, offset: token.offset };
      case "regex":
        throw unexpected(token, "regular expressions only go on the right of =~ or !~");
      case "punctuation":
        if (token.text === "(") return this.parenthesised(token, depth);
        throw unexpected(token, "expected a value");
      case "operator":
      case "end":
        throw unexpected(token, "expected a value");
      case "identifier":
        return this.identifier(token);
    }
  }

  private parenthesised(open: Token, depth: number): ConditionNode {
    const inner = this.expression(depth + 1);
    const close = this.next();
    if (close.kind !== "punctuation" || close.text !== ")") {
      throw unexpected(close, `expected ")" to close the "(" at ${describePosition(this.source, open.offset)}`);
    }
    return inner;
  }

  private identifier(token: Token & { kind: "identifier" }): ConditionNode {
    const name = token.text;
    if (name === "true" || name === "false") return { kind: "literal", value: name === "true", offset: token.offset };
    if (name === "null") return { kind: "literal", value: null, offset: token.offset };
    if (name === "includes") throw unexpected(token, "expected a value");
    const after = this.peek();
    if (after.kind === "punctuation" && after.text === "(") {
      if (!isConditionFunction(name)) {
        throw new ConditionError(`unknown function ${name}()`, token.offset, 'the only function is build.env("NAME")');
      }
      this.next();
      return { kind: "call", name, args: this.arguments(name, token, after), offset: token.offset };
    }
    if (isConditionFunction(name)) {
      throw new ConditionError(`${name} is a function`, token.offset, `write ${name}("NAME")`);
    }
    if (!isConditionVariable(name)) throw new ConditionError(`unknown variable ${name}`, token.offset);
    return { kind: "variable", name, offset: token.offset };
  }

  private arguments(name: string, callee: Token, open: Token): ConditionNode[] {
    const args: ConditionNode[] = [];
    if (!this.isPunctuation(")")) {
      for (;;) {
        args.push(this.expression(1));
        if (!this.isPunctuation(",")) break;
        this.next();
      }
    }
    const close = this.next();
    if (close.kind !== "punctuation" || close.text !== ")") {
      throw unexpected(close, `expected ")" to close the "(" at ${describePosition(this.source, open.offset)}`);
    }
    const arity = CONDITION_FUNCTIONS[name];
    if (args.length !== arity) {
      throw new ConditionError(
        `${name}() takes ${arity === 1 ? "one argument" : `${arity} arguments`}, got ${args.length}`,
        callee.offset,
        `write ${name}("NAME")`,
      );
    }
    return args;
  }

  private isPunctuation(text: string): boolean {
    const token = this.peek();
    return token.kind === "punctuation" && token.text === text;
  }
}

/** A compiled `/…/` literal: whether it matches somewhere in a string. */
export interface ConditionRegex {
  test(input: string): boolean;
  /** The literal as written (`/…/flags`). */
  toString(): string;
}

/** The longest regular expression a condition may hold. */
const MAX_REGEX_LENGTH = 1024;

/** The JavaScript flags a literal may carry, as RE2's. */
const REGEX_FLAGS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
};

/**
 * Compiles a literal on RE2 (re2js): matching takes time linear in the string whatever the pattern, so no `if:`
 * can stall the service. RE2 has no look-arounds or back-references; a pattern using them is refused here.
 */
function compileRegex(token: Token & { kind: "regex" }): ConditionRegex {
  if (token.source.length > MAX_REGEX_LENGTH)
    throw new ConditionError(
      `regular expression ${token.text.slice(0, 40)}… is too long`,
      token.offset,
      `keep it under ${MAX_REGEX_LENGTH} characters`,
    );
  let flags = 0;
  for (const flag of token.flags) flags |= REGEX_FLAGS[flag] ?? 0;
  try {
    const compiled = RE2JS.compile(token.source, flags);
    return { test: (input) => compiled.test(input), toString: () => token.text };
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).replace(/^error parsing regexp: /, "");
    throw new ConditionError(
      `invalid regular expression ${token.text}`,
      token.offset,
      `${message} (RE2 syntax: no look-arounds or back-references)`,
    );
  }
}
