/**
 * Buildkite conditional expressions (`if:` on steps), docs/compatibility.md#pipeline-yaml: validation for pipeline saves and
 * evaluation when a build is created.
 *
 * Semantics where the reference leaves room:
 * - `==`/`!=` are JavaScript strict equality on strings, integers, booleans and null (`"1" == 1` is false); two
 *   lists are equal when their items are.
 * - `=~`/`!~` test a string against the regular expression (JavaScript syntax, flags i, m, s). A null left side
 *   (no tag, unset env variable) never matches, so `=~` is false and `!~` true. Any other left side is an error.
 * - `includes` asks whether a list holds a value; a null left side holds nothing. Any other left side is an error.
 * - `!`, `&&`, `||` and the overall result take booleans; null counts as false (`!build.pull_request.draft` works
 *   without a pull request). Strings, numbers and lists there are errors, so `if: build.tag` is refused with a hint
 *   rather than guessed at. `&&` and `||` short-circuit.
 * - Unknown variables and functions are errors when parsing, so they are reported when the pipeline is saved.
 */

import type { BuildContext } from "./build-context.js";
import { ConditionError, describeProblem } from "./condition-lexer.js";
import { type ConditionNode, parseCondition } from "./condition-parser.js";
import { buildEnvValue, CONDITION_VARIABLES, type ConditionValue } from "./condition-variables.js";

/** The outcome of evaluating a condition: its value, or a message that names the column at fault. */
export type ConditionResult = { ok: true; value: boolean } | { ok: false; error: string };

/** Parsed trees by source: the same few `if:` expressions are evaluated for every build of a pipeline. */
const cache = new Map<string, ConditionNode>();
const CACHE_LIMIT = 500;

/** Evaluates `expression` against the build being created. Never throws. */
export function evaluateCondition(expression: string, ctx: BuildContext): ConditionResult {
  try {
    const value = evaluate(parsed(expression), ctx);
    return { ok: true, value: asBoolean(value, "the condition", 0, "must be true or false") };
  } catch (error) {
    if (error instanceof ConditionError) return { ok: false, error: describeProblem(expression, error) };
    throw error;
  }
}

/** Why `expression` is not a valid condition, as a sentence a person can act on; undefined when it parses. */
export function conditionProblem(expression: unknown): string | undefined {
  if (typeof expression !== "string") return `must be a string, got ${describeJs(expression)}`;
  try {
    parsed(expression);
    return undefined;
  } catch (error) {
    if (error instanceof ConditionError) return describeProblem(expression, error);
    throw error;
  }
}

function parsed(expression: string): ConditionNode {
  const cached = cache.get(expression);
  if (cached) return cached;
  const node = parseCondition(expression);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(expression, node);
  return node;
}

function evaluate(node: ConditionNode, ctx: BuildContext): ConditionValue {
  switch (node.kind) {
    case "literal":
      return node.value;
    case "variable": {
      // The parser only lets known names through.
      const read = CONDITION_VARIABLES[node.name];
      return read ? read(ctx) : null;
    }
    case "call": {
      const arg = evaluate(node.args[0] ?? { kind: "literal", value: null, offset: node.offset }, ctx);
      if (typeof arg !== "string") {
        throw new ConditionError(`${node.name}() needs a string, got ${describeValue(arg)}`, node.offset);
      }
      return buildEnvValue(ctx, arg);
    }
    case "not":
      return !asBoolean(evaluate(node.operand, ctx), '"!"', node.offset);
    case "logical": {
      const left = asBoolean(evaluate(node.left, ctx), `"${node.op}"`, node.offset);
      if (node.op === "&&" ? !left : left) return left;
      return asBoolean(evaluate(node.right, ctx), `"${node.op}"`, node.offset);
    }
    case "compare": {
      const equal = valuesEqual(evaluate(node.left, ctx), evaluate(node.right, ctx));
      return node.op === "==" ? equal : !equal;
    }
    case "match": {
      const left = evaluate(node.left, ctx);
      if (left === null) return node.op === "!~";
      if (typeof left !== "string") {
        throw new ConditionError(`"${node.op}" needs a string on its left, got ${describeValue(left)}`, node.offset);
      }
      const matched = node.regex.test(left);
      return node.op === "=~" ? matched : !matched;
    }
    case "includes": {
      const left = evaluate(node.left, ctx);
      const right = evaluate(node.right, ctx);
      if (left === null) return false;
      if (!Array.isArray(left)) {
        throw new ConditionError(
          `"includes" needs a list on its left, got ${describeValue(left)}`,
          node.offset,
          'for example build.pull_request.labels includes "deploy"',
        );
      }
      return left.some((item) => valuesEqual(item, right));
    }
  }
}

function valuesEqual(a: ConditionValue, b: ConditionValue): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}

function asBoolean(value: ConditionValue, what: string, offset: number, verb = "needs true, false or null"): boolean {
  if (typeof value === "boolean") return value;
  if (value === null) return false;
  throw new ConditionError(
    `${what} ${verb}, got ${describeValue(value)}`,
    offset,
    'compare the value instead, for example build.tag != null or build.branch == "main"',
  );
}

function describeValue(value: ConditionValue): string {
  if (Array.isArray(value)) return `a list ${JSON.stringify(value)}`;
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`;
  return `${typeof value === "number" ? "the number " : ""}${String(value)}`;
}

function describeJs(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value;
}
