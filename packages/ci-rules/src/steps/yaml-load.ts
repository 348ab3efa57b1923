/**
 * The YAML loading stage of parse-yaml.ts: turns the pipeline source text into the `Val` tree (typed values side by
 * side with their source text), within the bounds of STEP_LIMITS on nesting depth and alias expansion.
 */

import {
  type Alias,
  Composer,
  type CST,
  type Document,
  isAlias,
  LineCounter,
  type Node,
  Parser,
  visit,
  type YAMLError,
  YAMLParseError,
} from "yaml";
import type { StepError } from "./step.js";
import type { Val } from "./step-checks.js";
import { STEP_LIMITS } from "./step-limits.js";

/** At most this many YAML syntax errors are reported (the first is usually the cause of the rest). */
const MAX_SYNTAX_ERRORS = 5;

type Loaded = { ok: true; root: Val } | { ok: false; errors: StepError[] };

/**
 * Parses the YAML once into its syntax tree, refuses nesting deeper than STEP_LIMITS.maxYamlDepth (the composer
 * recurses per level) and aliases that expand the document past STEP_LIMITS.maxExpandedYamlBytes, then composes it
 * twice: with the core schema (typed values) and the failsafe one (every scalar as its text).
 */
export function loadYaml(source: string): Loaded {
  const lineCounter = new LineCounter();
  const tokens = [...new Parser(lineCounter.addNewLine).parse(source)];
  const depth = nestingDepth(tokens);
  if (depth > STEP_LIMITS.maxYamlDepth) {
    return {
      ok: false,
      errors: [{ field: "configuration", code: `nests deeper than ${STEP_LIMITS.maxYamlDepth} levels` }],
    };
  }
  const doc = composeOne(tokens, source, "core");
  if (doc.errors.length > 0) {
    return { ok: false, errors: doc.errors.slice(0, MAX_SYNTAX_ERRORS).map((e) => syntaxError(e, lineCounter)) };
  }
  const expansion = expandedSize(doc, source.length);
  if (expansion.problem) return { ok: false, errors: [{ field: "configuration", code: expansion.problem }] };
  let core: unknown;
  try {
    core = doc.toJS({ maxAliasCount: 100, mapAsMap: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    let where = "";
    visit(doc, {
      Alias(_, node: Alias) {
        if (node.resolve(doc) === undefined && node.range) {
          const pos = lineCounter.linePos(node.range[0]);
          where = ` at line ${pos.line}, column ${pos.col}`;
          return visit.BREAK;
        }
        return undefined;
      },
    });
    return { ok: false, errors: [{ field: "configuration", code: `YAML syntax error${where}: ${message}` }] };
  }
  let raw: unknown;
  try {
    raw = composeOne(tokens, source, "failsafe").toJS({ maxAliasCount: 100, mapAsMap: true });
  } catch {
    raw = undefined;
  }
  return { ok: true, root: zip(core, raw) };
}

/** The first document of the parsed tokens (as `parseDocument` composes it); a second one is an error. */
function composeOne(tokens: CST.Token[], source: string, schema: "core" | "failsafe"): Document.Parsed {
  const composer = new Composer({ merge: true, schema });
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens, true, source.length)) {
    if (!doc) doc = next;
    else {
      doc.errors.push(
        new YAMLParseError(
          [next.range[0], next.range[1]],
          "MULTIPLE_DOCS",
          "Source contains multiple documents; a pipeline is one YAML document",
        ),
      );
      break;
    }
  }
  return doc as Document.Parsed;
}

/** How deep the collections of a syntax tree nest, walked without recursion. */
export function nestingDepth(tokens: readonly CST.Token[]): number {
  const stack: Array<[unknown, number]> = tokens.map((t) => [t, 0]);
  let max = 0;
  while (stack.length > 0) {
    const [token, depth] = stack.pop() as [unknown, number];
    if (!token || typeof token !== "object") continue;
    const t = token as { type?: string; value?: unknown; items?: Array<{ key?: unknown; value?: unknown }> };
    if (t.type === "document") stack.push([t.value, depth]);
    else if (t.type === "block-map" || t.type === "block-seq" || t.type === "flow-collection") {
      if (depth + 1 > max) max = depth + 1;
      if (max > STEP_LIMITS.maxYamlDepth) return max;
      for (const item of t.items ?? []) {
        stack.push([item.key, depth + 1]);
        stack.push([item.value, depth + 1]);
      }
    }
  }
  return max;
}

/**
 * The size of the document once every alias is replaced by what it names (counted in source characters), or why
 * it is too large: a few lines of anchors and aliases can otherwise stand for gigabytes (an alias bomb). Each
 * anchored node's expanded size is computed once, so the check is linear in the document.
 */
function expandedSize(doc: Document.Parsed, sourceLength: number): { size: number; problem?: string } {
  const limit = STEP_LIMITS.maxExpandedYamlBytes;
  const tooLarge = `expands past ${limit} bytes through its aliases (anchors \`&\` referred to with \`*\`)`;
  const known = new Map<Node, number>();
  const inProgress = new Set<Node>();
  /** The extra size the aliases inside `root` add. */
  const aliasesIn = (root: Node | Document.Parsed): number => {
    let extra = 0;
    visit(root, {
      Alias(_, alias: Alias) {
        const target = alias.resolve(doc);
        if (!target) return undefined;
        extra += sizeOf(target) - aliasLength(alias);
        return extra > limit ? visit.BREAK : undefined;
      },
    });
    return extra;
  };
  const sizeOf = (node: Node): number => {
    const cached = known.get(node);
    if (cached !== undefined) return cached;
    if (inProgress.has(node)) return limit + 1;
    inProgress.add(node);
    const [start = 0, , end = start] = node.range ?? [];
    const size = end - start + (isAlias(node) ? 0 : aliasesIn(node));
    inProgress.delete(node);
    known.set(node, size);
    return size;
  };
  const size = sourceLength + aliasesIn(doc);
  return size > limit ? { size, problem: tooLarge } : { size };
}

function aliasLength(alias: Alias): number {
  const [start = 0, , end = start] = alias.range ?? [];
  return end - start;
}

/**
 * Turns the two parses (as Maps, which keep every key's order and type) into plain objects side by side. Mapping
 * keys are taken as written (`TRUE:` is the key "TRUE", `1.10:` is "1.10"), as go-yaml decodes them into strings.
 */
function zip(core: unknown, raw: unknown): Val {
  if (core instanceof Map) {
    const v: Record<string, unknown> = {};
    const r: Record<string, unknown> = {};
    const rawEntries = raw instanceof Map ? [...raw.entries()] : [];
    let index = 0;
    for (const [key, value] of core) {
      const rawEntry = rawEntries[index++];
      const rawKey = rawEntry?.[0];
      const name = typeof rawKey === "string" ? rawKey : key === null || key === undefined ? "" : String(key);
      const child = zip(value, rawEntry?.[1]);
      Object.defineProperty(v, name, { value: child.v, enumerable: true, writable: true, configurable: true });
      Object.defineProperty(r, name, { value: child.raw, enumerable: true, writable: true, configurable: true });
    }
    return { v, raw: r };
  }
  if (Array.isArray(core)) {
    const rawList = Array.isArray(raw) ? raw : [];
    const pairs = core.map((value, i) => zip(value, rawList[i]));
    return { v: pairs.map((pair) => pair.v), raw: pairs.map((pair) => pair.raw) };
  }
  return { v: core, raw };
}

function syntaxError(error: YAMLError, lineCounter: LineCounter): StepError {
  const message = error.message
    .replace(/ at line \d+, column \d+:?[\s\S]*$/, "")
    .replace(/\s+/g, " ")
    .trim();
  const pos = error.linePos?.[0] ?? lineCounter.linePos(error.pos[0]);
  const where = pos ? ` at line ${pos.line}, column ${pos.col}` : "";
  return { field: "configuration", code: `YAML syntax error${where}: ${message}` };
}
