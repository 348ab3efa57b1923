/**
 * Path globs matched without regular expressions or backtracking: a pattern is compiled into a small NFA (Thompson's
 * construction) and a path is matched by moving the set of live states one character at a time. The cost is at most
 * (path length × pattern size), whatever the pattern: a backtracking matcher for `*a*a*a*b` against `aaaa…` doubles
 * with every `a`, this one does not.
 *
 * Syntax (as the agent's own upload globs, doublestar): `*` any run of characters but `/`; `**` any run including
 * `/`, and as a whole segment (`a/**\/b`) zero or more directories; `?` one character but `/`; `[abc]`, `[a-z]`,
 * `[!x]` or `[^x]` one character of (or not of) a set, never `/`; `{a,b,c}` alternatives, which may nest; `\x` the
 * character x. An unclosed `[` or `{` is literal.
 */

/** The longest pattern accepted: compiling and matching are linear in it, but every path pays for its size. */
export const MAX_GLOB_LENGTH = 512;

type Test = (c: string) => boolean;

type Node =
  | { kind: "char"; test: Test }
  | { kind: "star" }
  | { kind: "globstar" }
  | { kind: "dirs" }
  | { kind: "alt"; options: Node[][] };

type State = { kind: "char"; test: Test; out: number } | { kind: "split"; out: number[] } | { kind: "match" };

/** A compiled glob, to match against many paths. */
export interface Glob {
  readonly pattern: string;
  readonly states: readonly State[];
  readonly start: number;
}

/** Raised for a pattern that is too long. */
export class GlobError extends Error {
  override name = "GlobError";
}

const notSlash: Test = (c) => c !== "/";
const any: Test = () => true;

/** Parses a character class starting after `[` at `chars[i]`; returns its test and the index after `]`, or null. */
function parseClass(chars: string[], i: number): { test: Test; next: number } | null {
  let j = i;
  let negate = false;
  if (chars[j] === "!" || chars[j] === "^") {
    negate = true;
    j += 1;
  }
  const singles = new Set<string>();
  const ranges: Array<[number, number]> = [];
  let first = true;
  while (j < chars.length && (chars[j] !== "]" || first)) {
    first = false;
    let c = chars[j] as string;
    if (c === "\\" && j + 1 < chars.length) {
      j += 1;
      c = chars[j] as string;
    }
    if (chars[j + 1] === "-" && j + 2 < chars.length && chars[j + 2] !== "]") {
      let hi = chars[j + 2] as string;
      let skip = 3;
      if (hi === "\\" && j + 3 < chars.length) {
        hi = chars[j + 3] as string;
        skip = 4;
      }
      ranges.push([c.codePointAt(0) ?? 0, hi.codePointAt(0) ?? 0]);
      j += skip;
    } else {
      singles.add(c);
      j += 1;
    }
  }
  if (j >= chars.length) return null;
  const inSet = (c: string) => {
    if (singles.has(c)) return true;
    const code = c.codePointAt(0) ?? 0;
    return ranges.some(([lo, hi]) => code >= lo && code <= hi);
  };
  return { test: (c) => c !== "/" && inSet(c) !== negate, next: j + 1 };
}

/** The index of the `}` closing a `{` at `open`, or -1 when it is unclosed. */
function closingBrace(chars: string[], open: number): number {
  let depth = 0;
  for (let j = open; j < chars.length; j++) {
    const c = chars[j];
    if (c === "\\") j += 1;
    else if (c === "{") depth += 1;
    else if (c === "}") {
      depth -= 1;
      if (depth === 0) return j;
    }
  }
  return -1;
}

/** Parses chars[from, to) into a sequence of nodes. */
function parseSequence(chars: string[], from: number, to: number): Node[] {
  const out: Node[] = [];
  let i = from;
  while (i < to) {
    const c = chars[i] as string;
    if (c === "\\" && i + 1 < to) {
      const lit = chars[i + 1] as string;
      out.push({ kind: "char", test: (x) => x === lit });
      i += 2;
    } else if (c === "*") {
      if (chars[i + 1] === "*" && i + 1 < to) {
        let j = i + 2;
        while (j < to && chars[j] === "*") j += 1;
        const segmentStart =
          i === from
            ? from === 0 || chars[i - 1] === "/" || chars[i - 1] === "{" || chars[i - 1] === ","
            : chars[i - 1] === "/";
        if (segmentStart && chars[j] === "/" && j < to) {
          out.push({ kind: "dirs" });
          i = j + 1;
        } else {
          out.push({ kind: "globstar" });
          i = j;
        }
      } else {
        out.push({ kind: "star" });
        i += 1;
      }
    } else if (c === "?") {
      out.push({ kind: "char", test: notSlash });
      i += 1;
    } else if (c === "[") {
      const cls = parseClass(chars, i + 1);
      if (cls && cls.next <= to) {
        out.push({ kind: "char", test: cls.test });
        i = cls.next;
      } else {
        out.push({ kind: "char", test: (x) => x === "[" });
        i += 1;
      }
    } else if (c === "{") {
      const close = closingBrace(chars, i);
      if (close < 0 || close >= to) {
        out.push({ kind: "char", test: (x) => x === "{" });
        i += 1;
        continue;
      }
      const options: Node[][] = [];
      let depth = 0;
      let start = i + 1;
      for (let j = i + 1; j <= close; j++) {
        const d = chars[j];
        if (d === "\\") j += 1;
        else if (d === "{") depth += 1;
        else if (d === "}" && depth > 0) depth -= 1;
        else if ((d === "," && depth === 0) || j === close) {
          options.push(parseSequence(chars, start, j));
          start = j + 1;
        }
      }
      out.push({ kind: "alt", options });
      i = close + 1;
    } else {
      out.push({ kind: "char", test: (x) => x === c });
      i += 1;
    }
  }
  return out;
}

/** Compiles a glob; throws GlobError when it is longer than MAX_GLOB_LENGTH characters. */
export function compileGlob(pattern: string): Glob {
  const chars = Array.from(pattern);
  if (chars.length > MAX_GLOB_LENGTH) throw new GlobError(`A search query is at most ${MAX_GLOB_LENGTH} characters`);
  const states: State[] = [{ kind: "match" }];
  const add = (s: State) => states.push(s) - 1;
  /** A loop over characters passing `test`, leaving to `next`: split → (char → split) | next. */
  const loop = (test: Test, next: number) => {
    const split = add({ kind: "split", out: [] });
    const char = add({ kind: "char", test, out: split });
    (states[split] as { out: number[] }).out.push(char, next);
    return split;
  };
  const compileSeq = (nodes: Node[], next: number): number => {
    let at = next;
    for (let k = nodes.length - 1; k >= 0; k--) {
      const node = nodes[k] as Node;
      if (node.kind === "char") at = add({ kind: "char", test: node.test, out: at });
      else if (node.kind === "star") at = loop(notSlash, at);
      else if (node.kind === "globstar") at = loop(any, at);
      else if (node.kind === "dirs") {
        // Zero or more whole directories: nothing, or any run of characters that ends with "/".
        const slash = add({ kind: "char", test: (c) => c === "/", out: at });
        at = add({ kind: "split", out: [loop(any, slash), at] });
      } else {
        const cont = at;
        at = add({ kind: "split", out: node.options.map((option) => compileSeq(option, cont)) });
      }
    }
    return at;
  };
  const start = compileSeq(parseSequence(chars, 0, chars.length), 0);
  return { pattern, states, start };
}

/** Whether the whole of `path` matches the compiled glob. */
export function matchGlob(glob: Glob, path: string): boolean {
  const { states } = glob;
  // Generation marks instead of fresh sets: each state is added at most once per step.
  const seen = new Uint32Array(states.length);
  let generation = 1;
  let current: number[] = [];
  let matched = false;
  const addState = (list: number[], s: number) => {
    const stack = [s];
    while (stack.length > 0) {
      const id = stack.pop() as number;
      if (seen[id] === generation) continue;
      seen[id] = generation;
      const state = states[id] as State;
      if (state.kind === "split") for (let k = state.out.length - 1; k >= 0; k--) stack.push(state.out[k] as number);
      else list.push(id);
    }
  };
  addState(current, glob.start);
  for (const c of path) {
    generation += 1;
    const next: number[] = [];
    for (const id of current) {
      const state = states[id] as State;
      if (state.kind === "char" && state.test(c)) addState(next, state.out);
    }
    current = next;
    if (current.length === 0) return false;
  }
  for (const id of current) if ((states[id] as State).kind === "match") matched = true;
  return matched;
}
