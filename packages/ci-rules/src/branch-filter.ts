/**
 * Branch filter patterns, as Buildkite uses them for a pipeline's `branch_configuration`, the
 * `skip_queued_branch_builds_filter` / `cancel_running_branch_builds_filter` settings, a step's `branches:` and
 * provider pull-request filters.
 *
 * Syntax (docs/compatibility.md#branch-filters-and-agent-targeting):
 * - a pattern is a list of terms separated by whitespace;
 * - `*` in a term matches any run of characters, including none and including `/`;
 * - a leading `!` negates a term;
 * - a blank pattern, or `*`, matches every branch;
 * - a branch matches when at least one positive term matches it and no negative term does;
 * - a pattern with only negative terms behaves as if `*` were also present.
 *
 * Matching is case-sensitive, like git branch names, and every other character (`.`, `?`, `[`, …) is literal.
 * Terms are matched without regular expressions (wildcard.ts), so no pattern can make matching slow.
 */

import { compileWildcard, matchesWildcard, type Wildcard } from "./wildcard.js";

interface CompiledFilter {
  positive: Wildcard[];
  negative: Wildcard[];
}

/** A small cache: the same few patterns are matched against many branches. */
const cache = new Map<string, CompiledFilter>();
const CACHE_LIMIT = 500;

/** Splits a pattern into its terms (whitespace-separated, empty terms dropped). */
export function branchFilterTerms(pattern: string | null | undefined): string[] {
  if (pattern === null || pattern === undefined) return [];
  return pattern.split(/\s+/).filter((term) => term.length > 0);
}

function compile(pattern: string): CompiledFilter {
  const cached = cache.get(pattern);
  if (cached) return cached;
  const positive: Wildcard[] = [];
  const negative: Wildcard[] = [];
  for (const term of branchFilterTerms(pattern)) {
    if (term.startsWith("!")) {
      const body = term.slice(1);
      // An empty negation ("!") negates nothing; branchFilterProblem reports it.
      if (body.length > 0) negative.push(compileWildcard(body));
    } else {
      positive.push(compileWildcard(term));
    }
  }
  if (positive.length === 0) positive.push(compileWildcard("*"));
  const compiled = { positive, negative };
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pattern, compiled);
  return compiled;
}

/**
 * Whether `branch` passes the filter `pattern`. A null, undefined or blank pattern matches every branch.
 */
export function matchesBranchFilter(pattern: string | null | undefined, branch: string): boolean {
  if (pattern === null || pattern === undefined || pattern.trim() === "") return true;
  const { positive, negative } = compile(pattern);
  return positive.some((w) => matchesWildcard(w, branch)) && !negative.some((w) => matchesWildcard(w, branch));
}

/**
 * Why `pattern` is not a usable branch filter, as a sentence a person can act on; undefined when it is fine.
 * null, undefined and blank patterns are fine (they mean "all branches").
 */
export function branchFilterProblem(pattern: unknown): string | undefined {
  if (pattern === null || pattern === undefined) return undefined;
  if (typeof pattern !== "string") {
    return `must be a string of space-separated branch patterns, got ${describe(pattern)}`;
  }
  // Control characters other than whitespace cannot appear in a branch name.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: detecting control characters is the point
  if (/[\u0000-\u0008\u000e-\u001f\u007f]/.test(pattern)) {
    return "must not contain control characters";
  }
  for (const term of branchFilterTerms(pattern)) {
    if (term === "!") {
      return 'contains an empty negation "!"; write "!branch-name" with no space after the "!" to exclude a branch';
    }
    if (term.startsWith("!!")) {
      return `contains "${term}" with more than one leading "!"; use a single "!" to exclude a branch`;
    }
  }
  return undefined;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  return `${typeof value} ${JSON.stringify(value)}`;
}
