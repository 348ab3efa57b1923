/**
 * Parses pipeline YAML (the REST `configuration` string) into the step model, following buildkite-compat.md B7
 * and Buildkite's pipeline schema. A pure function: no I/O, no clock.
 *
 * Decisions where B7 leaves room:
 * - Top level: a mapping with `steps:` (plus `env:`, `agents:`, `notify:`; other keys are ignored) or a bare list
 *   of steps. `agents:` applies to each command step that sets no agents of its own. `notify:` is ignored.
 * - Groups are flattened: their steps take the group's place in the list, and each carries
 *   `group: {label, key?}`. The group's `depends_on` is added to each of its steps' own, its `if` is and-ed with
 *   each step's (`(group) && (step)`), and its `allow_dependency_failure` and `skip` apply to steps that do not set
 *   them. A group's key is a key like a step's (unique, not UUID-shaped) and `depends_on` may name it, meaning all of
 *   its steps. A step with `branches:` inside a group with `if:` is refused, as `branches` + `if` is on one step.
 *   Groups cannot be nested. `branches:` and `notify:` on a group are ignored (Buildkite's schema has neither).
 * - Input steps are block steps with `is_input: true`; `block:`/`input:` give the label, else `label`/`name`.
 * - `retry.automatic: true` is `[{exit_status: "*", signal: "*", signal_reason: "*", limit: 2}]` (B7), `false` is
 *   `[]`; a rule without `exit_status` matches any ("*"), and without `limit` gets 2.
 * - `depends_on: ~` and `depends_on: []` are kept as `[]` ("explicitly none"), distinct from absent.
 * - Scalars in string positions (labels, env values, agent tags, matrix values) keep their source text, as go-yaml
 *   does for string fields: `VERSION: 1.10` is "1.10", not "1.1".
 * - Booleans accept true/false and the strings "true"/"false" (as Buildkite's schema does), nothing else.
 * - Plugin-only steps have `command: ""`. Unknown attributes are ignored; wrong types are errors.
 * - The nested forms of Buildkite's schema are accepted: `- wait: {continue_on_failure: true}`,
 *   `- block: {prompt: ...}`, `- command: {command: ...}`, `- trigger: {trigger: slug, ...}`.
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
import { branchFilterProblem } from "../branch-filter.js";
import { formatProblem } from "./block-fields.js";
import type {
  AutomaticRetryRule,
  ManualStep,
  PipelineStep,
  ScriptStep,
  StepCommon,
  StepError,
  StepMatrix,
  StepsResult,
  TriggerStep,
  WaiterStep,
} from "./step.js";
import {
  checkDependencies,
  describeValue,
  isMapping,
  isUnset,
  item,
  KeyRegistry,
  listWords,
  member,
  Problems,
  readAgentRules,
  readBool,
  readDependsOn,
  readEnvMap,
  readInt,
  readKey,
  readSoftFail,
  readString,
  readStringArray,
  readStringMap,
  readStringOrList,
  type StepEntry,
  scalarText,
  type Val,
} from "./step-checks.js";
import { STEP_LIMITS } from "./step-limits.js";

export const MISSING_STEPS = "Step configuration is missing, expected a top-level `steps:` list";

/** At most this many YAML syntax errors are reported (the first is usually the cause of the rest). */
const MAX_SYNTAX_ERRORS = 5;
/** The largest `concurrency` limit, and the longest `concurrency_group` name. */
const MAX_CONCURRENCY = 10_000;
const MAX_CONCURRENCY_GROUP_LENGTH = 255;

type Kind = "script" | "waiter" | "block" | "input" | "trigger" | "group";

const KIND_BY_TYPE: Record<string, Kind> = {
  script: "script",
  command: "script",
  commands: "script",
  wait: "waiter",
  waiter: "waiter",
  block: "block",
  manual: "block",
  input: "input",
  trigger: "trigger",
  group: "group",
};

/** Key inference, in go-pipeline's order (GP:steps.go stepByKeyInference). */
const KIND_BY_KEY: Array<[string, Kind]> = [
  ["command", "script"],
  ["commands", "script"],
  ["plugins", "script"],
  ["wait", "waiter"],
  ["waiter", "waiter"],
  ["block", "block"],
  ["input", "input"],
  ["manual", "block"],
  ["trigger", "trigger"],
  ["group", "group"],
];

const SCALAR_STEPS: Record<string, Exclude<Kind, "group">> = {
  wait: "waiter",
  waiter: "waiter",
  block: "block",
  input: "input",
};

const FIELD_KEY = /^[A-Za-z0-9_\-/]+$/;
const MATRIX_DIMENSION = /^[A-Za-z0-9_]+$/;

interface GroupInfo {
  label: string;
  key?: string;
  depends_on?: Array<{ step: string; allow_failure: boolean }>;
  if?: string;
  allow_dependency_failure?: boolean;
  skip?: boolean | string;
}

interface Ctx {
  p: Problems;
  keys: KeyRegistry;
  entries: StepEntry[];
}

/** Options of parsePipelineYaml. */
export interface ParseOptions {
  /**
   * Keys of steps and groups that already exist (a pipeline upload adds steps to a running build): new steps may
   * depend on them and may not declare them again.
   */
  existingKeys?: readonly string[];
}

/** Where a key declared before the parsed document lives, for error messages. */
const EXISTING_KEY_OWNER = "a step already in this build";

/** Parses pipeline YAML into steps and the pipeline-level `env`. */
export function parsePipelineYaml(source: string, options: ParseOptions = {}): StepsResult {
  if (typeof source !== "string") return fail([{ field: "configuration", code: "must be a string of pipeline YAML" }]);
  const bytes = Buffer.byteLength(source, "utf8");
  if (bytes > STEP_LIMITS.maxYamlBytes) {
    return fail([{ field: "configuration", code: `is too large (maximum is ${STEP_LIMITS.maxYamlBytes} bytes)` }]);
  }
  try {
    return parseSource(source, options);
  } catch {
    // Defensive: input the bounds below did not foresee must not escape, nor its engine's message (a stack trace's
    // words are no help to the person who wrote the YAML).
    return fail([{ field: "configuration", code: "could not be read as pipeline YAML" }]);
  }
}

function parseSource(source: string, options: ParseOptions): StepsResult {
  const loaded = loadYaml(source);
  if (!loaded.ok) return fail(loaded.errors);
  const root = loaded.root;

  const p = new Problems();
  let env: Record<string, string> = {};
  let defaultAgents: string[] | undefined;
  let stepsVal: Val;
  let stepsField: string;

  if (root.v === null || root.v === undefined) return fail([{ field: "configuration", code: MISSING_STEPS }]);
  if (Array.isArray(root.v)) {
    stepsVal = root;
    stepsField = "configuration";
  } else if (isMapping(root.v)) {
    env = readEnvMap(member(root, "env"), "configuration.env", p) ?? {};
    defaultAgents = readAgentRules(member(root, "agents"), "configuration.agents", p);
    const steps = member(root, "steps");
    if (isUnset(steps)) return fail([{ field: "configuration", code: MISSING_STEPS }, ...p.errors]);
    if (!Array.isArray(steps.v)) {
      p.add("configuration.steps", `must be a list of steps, got ${describeValue(steps.v)}`);
      return fail(p.errors);
    }
    stepsVal = steps;
    stepsField = "configuration.steps";
  } else {
    return fail([
      {
        field: "configuration",
        code: `must be a mapping with a \`steps:\` list, or a list of steps; got ${describeValue(root.v)}`,
      },
    ]);
  }
  if ((stepsVal.v as unknown[]).length === 0)
    return fail([{ field: "configuration", code: MISSING_STEPS }, ...p.errors]);

  const keys = new KeyRegistry();
  for (const key of options.existingKeys ?? []) keys.declared.set(key, EXISTING_KEY_OWNER);
  const ctx: Ctx = { p, keys, entries: [] };
  parseStepList(stepsVal, stepsField, ctx, undefined);
  if (p.count === 0) checkDependencies(ctx.entries, ctx.keys, p);
  if (p.count > 0) return fail(p.errors);

  const steps: PipelineStep[] = ctx.entries.map((entry) => entry.step);
  if (defaultAgents && defaultAgents.length > 0) {
    for (const step of steps) {
      if (step.type === "script" && step.agent_query_rules.length === 0) step.agent_query_rules = [...defaultAgents];
    }
  }
  return { ok: true, steps, env };
}

function fail(errors: StepError[]): StepsResult {
  return { ok: false, errors };
}

type Loaded = { ok: true; root: Val } | { ok: false; errors: StepError[] };

/**
 * Parses the YAML once into its syntax tree, refuses nesting deeper than STEP_LIMITS.maxYamlDepth (the composer
 * recurses per level) and aliases that expand the document past STEP_LIMITS.maxExpandedYamlBytes, then composes it
 * twice: with the core schema (typed values) and the failsafe one (every scalar as its text).
 */
function loadYaml(source: string): Loaded {
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

function parseStepList(list: Val, field: string, ctx: Ctx, group: GroupInfo | undefined): void {
  const length = (list.v as unknown[]).length;
  for (let i = 0; i < length; i++) parseStep(item(list, i), `${field}[${i}]`, ctx, group);
}

function parseStep(val: Val, field: string, ctx: Ctx, group: GroupInfo | undefined): void {
  const { p } = ctx;
  const v = val.v;
  if (typeof v === "string") {
    const kind = SCALAR_STEPS[v.trim()];
    if (!kind) {
      p.add(
        field,
        `is the string ${describeValue(v)}, but a step written as a string must be "wait", "block" or "input"; ` +
          "to run a command write `- command: ...`",
      );
      return;
    }
    addStep(buildStep(kind, { v: {}, raw: {} }, field, ctx), field, ctx, group);
    return;
  }
  if (!isMapping(v)) {
    p.add(
      field,
      `must be a step (a mapping such as \`command: ...\`) or "wait", "block" or "input"; got ${describeValue(v)}`,
    );
    return;
  }

  let kind: Kind | undefined;
  let body = val;
  const typeVal = member(val, "type");
  if (!isUnset(typeVal)) {
    const typeName = typeof typeVal.v === "string" ? typeVal.v : undefined;
    kind = typeName === undefined ? undefined : KIND_BY_TYPE[typeName];
    if (!kind) {
      p.add(
        `${field}.type`,
        `${describeValue(typeVal.v)} is not a step type; use one of command, wait, block, input, trigger or group`,
      );
      return;
    }
  } else {
    const inferred = KIND_BY_KEY.find(([key]) => Object.hasOwn(v, key));
    if (!inferred) {
      const keys = Object.keys(v);
      p.add(
        field,
        keys.length === 0
          ? "is an empty mapping; a step needs one of command, commands, plugins, wait, block, input, trigger or group"
          : `is not a known kind of step: found ${listWords(keys.map((k) => `\`${k}\``))}, but a step needs one of ` +
              "command, commands, plugins, wait, block, input, trigger or group",
      );
      return;
    }
    const [key, inferredKind] = inferred;
    kind = inferredKind;
    // Nested form: `- wait: {continue_on_failure: true}`, `- trigger: {trigger: slug, ...}`.
    const inner = member(val, key);
    if (key !== "plugins" && key !== "group" && Object.keys(v).length === 1 && inner && isMapping(inner.v)) {
      body = inner;
    }
  }

  if (kind === "group") {
    if (group) {
      p.add(field, "is a group inside a group; groups cannot be nested, move its steps into the outer group");
      return;
    }
    parseGroup(body, field, ctx);
    return;
  }
  const step = buildStep(kind, body, field, ctx);
  addStep(step, field, ctx, group);
}

function addStep(step: PipelineStep | undefined, field: string, ctx: Ctx, group: GroupInfo | undefined): void {
  if (!step) return;
  if (group) applyGroup(step, group, field, ctx.p);
  ctx.entries.push({ step, field });
}

function applyGroup(step: PipelineStep, group: GroupInfo, field: string, p: Problems): void {
  step.group = group.key === undefined ? { label: group.label } : { label: group.label, key: group.key };
  if (group.depends_on) {
    const own = step.depends_on;
    if (own === undefined) {
      step.depends_on = group.depends_on.map((d) => ({ ...d }));
    } else {
      const inherited = group.depends_on.filter((d) => !own.some((o) => o.step === d.step)).map((d) => ({ ...d }));
      step.depends_on = [...inherited, ...own];
    }
  }
  if (group.if !== undefined) {
    if (step.branch_configuration !== undefined) {
      p.add(
        `${field}.branches`,
        "cannot be used in a group that has `if`; put the branch condition into an `if` (for example " +
          'build.branch == "main") on the step or the group',
      );
    }
    step.if = step.if === undefined ? group.if : `(${group.if}) && (${step.if})`;
  }
  if (group.allow_dependency_failure !== undefined && step.allow_dependency_failure === undefined) {
    step.allow_dependency_failure = group.allow_dependency_failure;
  }
  if (group.skip !== undefined && step.skip === undefined) step.skip = group.skip;
}

/** Returns the value of the first of `names` that is set (not null); refuses two set at once. */
function alias(body: Val, names: string[], field: string, p: Problems): { val: Val; field: string } | undefined {
  const set = names.filter((name) => !isUnset(member(body, name)));
  if (set.length > 1) {
    p.add(field, `sets both ${listWords(set.map((n) => `\`${n}\``))}; they mean the same, use only one`);
  }
  const first = set[0];
  if (first === undefined) return undefined;
  return { val: member(body, first) as Val, field: `${field}.${first}` };
}

function readAliasedString(body: Val, names: string[], field: string, p: Problems): string | undefined {
  const found = alias(body, names, field, p);
  return found ? readString(found.val, found.field, p) : undefined;
}

function readSkip(val: Val | undefined, field: string, p: Problems): boolean | string | undefined {
  if (isUnset(val)) return undefined;
  if (typeof val.v === "boolean") return val.v ? true : undefined;
  if (typeof val.v === "string") return val.v === "" ? undefined : val.v;
  return p.add(field, `must be true, false or a reason (a string), got ${describeValue(val.v)}`);
}

/** Attributes every step type may have; registers the key. */
function parseCommon(body: Val, field: string, ctx: Ctx): StepCommon {
  const { p } = ctx;
  const common: StepCommon = {};
  const keyFound = alias(body, ["key", "id", "identifier"], field, p);
  if (keyFound) {
    const key = readKey(keyFound.val, keyFound.field, p);
    if (key !== undefined && ctx.keys.register(key, keyFound.field, field, p)) common.key = key;
  }
  const dependsOn = readDependsOn(member(body, "depends_on"), `${field}.depends_on`, p);
  if (dependsOn !== undefined) common.depends_on = dependsOn;
  const allow = readBool(member(body, "allow_dependency_failure"), `${field}.allow_dependency_failure`, p);
  if (allow !== undefined) common.allow_dependency_failure = allow;
  const condition = readString(member(body, "if"), `${field}.if`, p);
  if (condition !== undefined && condition.trim() !== "") common.if = condition;
  const branches = readStringOrList(member(body, "branches"), `${field}.branches`, p, " ");
  if (branches !== undefined && branches.trim() !== "") {
    const problem = branchFilterProblem(branches);
    if (problem) p.add(`${field}.branches`, `is not a valid branch filter: it ${problem}`);
    else if (common.if !== undefined) {
      p.add(
        `${field}.branches`,
        "cannot be used together with `if` on the same step; put the branch condition into `if` " +
          '(for example build.branch == "main" || build.branch =~ /^release\\//)',
      );
    } else common.branch_configuration = branches;
  }
  const skip = readSkip(member(body, "skip"), `${field}.skip`, p);
  if (skip !== undefined) common.skip = skip;
  return common;
}

function buildStep(kind: Exclude<Kind, "group">, body: Val, field: string, ctx: Ctx): PipelineStep | undefined {
  const common = parseCommon(body, field, ctx);
  switch (kind) {
    case "script":
      return parseScript(body, field, ctx.p, common);
    case "waiter":
      return parseWaiter(body, field, ctx.p, common);
    case "block":
    case "input":
      return parseManual(body, field, ctx.p, common, kind);
    case "trigger":
      return parseTrigger(body, field, ctx.p, common);
  }
}

function parseScript(body: Val, field: string, p: Problems, common: StepCommon): ScriptStep {
  const commandFound = alias(body, ["command", "commands"], field, p);
  const command = commandFound ? readStringOrList(commandFound.val, commandFound.field, p, "\n") : undefined;
  const step: ScriptStep = {
    type: "script",
    name: readAliasedString(body, ["label", "name"], field, p) ?? "",
    command: command ?? "",
    agent_query_rules: [],
    ...common,
  };
  const artifacts = alias(body, ["artifact_paths", "artifacts"], field, p);
  if (artifacts) {
    const paths = readStringOrList(artifacts.val, artifacts.field, p, ";");
    if (paths !== undefined && paths !== "") step.artifact_paths = paths;
  }
  const env = readEnvMap(member(body, "env"), `${field}.env`, p);
  if (env !== undefined) step.env = env;
  const timeout = alias(body, ["timeout_in_minutes", "timeout"], field, p);
  if (timeout) {
    const minutes = readInt(timeout.val, timeout.field, p, { min: 1 });
    if (minutes !== undefined) step.timeout_in_minutes = minutes;
  }
  const agents = alias(body, ["agents", "agent_query_rules"], field, p);
  if (agents) step.agent_query_rules = readAgentRules(agents.val, agents.field, p) ?? [];

  const concurrency = readInt(member(body, "concurrency"), `${field}.concurrency`, p, {
    min: 1,
    max: MAX_CONCURRENCY,
  });
  const concurrencyGroup = readString(member(body, "concurrency_group"), `${field}.concurrency_group`, p, {
    nonEmpty: true,
  });
  const method = readString(member(body, "concurrency_method"), `${field}.concurrency_method`, p);
  if (concurrency !== undefined && concurrencyGroup === undefined && isUnset(member(body, "concurrency_group"))) {
    p.add(
      `${field}.concurrency`,
      'requires `concurrency_group`, the name shared by the steps this limit applies to (for example "deploy/production")',
    );
  }
  if (concurrencyGroup !== undefined && concurrency === undefined && isUnset(member(body, "concurrency"))) {
    p.add(`${field}.concurrency_group`, "requires `concurrency`, the number of jobs of the group that may run at once");
  }
  if (concurrency !== undefined) step.concurrency = concurrency;
  if (concurrencyGroup !== undefined && concurrencyGroup.length > MAX_CONCURRENCY_GROUP_LENGTH)
    p.add(`${field}.concurrency_group`, `is too long (maximum is ${MAX_CONCURRENCY_GROUP_LENGTH} characters)`);
  else if (concurrencyGroup !== undefined) step.concurrency_group = concurrencyGroup;
  if (method !== undefined) {
    if (method !== "ordered" && method !== "eager") {
      p.add(`${field}.concurrency_method`, `must be "ordered" or "eager", got ${describeValue(method)}`);
    } else if (isUnset(member(body, "concurrency")) || isUnset(member(body, "concurrency_group"))) {
      p.add(`${field}.concurrency_method`, "requires `concurrency` and `concurrency_group`");
    } else step.concurrency_method = method;
  }

  const parallelism = readInt(member(body, "parallelism"), `${field}.parallelism`, p, {
    min: 1,
    max: STEP_LIMITS.maxParallelism,
  });
  if (parallelism !== undefined) step.parallelism = parallelism;
  const priority = readInt(member(body, "priority"), `${field}.priority`, p);
  if (priority !== undefined) step.priority = priority;
  const retry = readRetry(member(body, "retry"), `${field}.retry`, p);
  if (retry !== undefined) step.retry = retry;
  const softFail = readSoftFail(member(body, "soft_fail"), `${field}.soft_fail`, p);
  if (softFail !== undefined) step.soft_fail = softFail;
  const cancel = readBool(member(body, "cancel_on_build_failing"), `${field}.cancel_on_build_failing`, p);
  if (cancel !== undefined) step.cancel_on_build_failing = cancel;
  const plugins = readPlugins(member(body, "plugins"), `${field}.plugins`, p);
  if (plugins !== undefined) step.plugins = plugins;
  const matrix = readMatrix(member(body, "matrix"), `${field}.matrix`, p);
  if (matrix !== undefined) {
    if (!isUnset(member(body, "parallelism"))) {
      p.add(`${field}.matrix`, "cannot be combined with `parallelism` on the same step; use one or the other");
    } else step.matrix = matrix;
  }
  return step;
}

function parseWaiter(body: Val, field: string, p: Problems, common: StepCommon): WaiterStep {
  const step: WaiterStep = { type: "waiter", ...common };
  const cont = readBool(member(body, "continue_on_failure"), `${field}.continue_on_failure`, p);
  if (cont !== undefined) step.continue_on_failure = cont;
  return step;
}

function parseManual(body: Val, field: string, p: Problems, common: StepCommon, kind: "block" | "input"): ManualStep {
  let label: string | undefined;
  for (const key of kind === "input" ? ["input"] : ["block", "manual"]) {
    const own = member(body, key);
    if (isUnset(own)) continue;
    const text = scalarText(own);
    if (text === undefined) {
      p.add(`${field}.${key}`, `must be the step's label (a string), got ${describeValue(own.v)}`);
    } else if (text !== "") {
      label = text;
    }
    break;
  }
  const aliasLabel = readAliasedString(body, ["label", "name"], field, p);
  const step: ManualStep = { type: "manual", label: label ?? aliasLabel ?? "", ...common };
  if (kind === "input") step.is_input = true;
  const prompt = readString(member(body, "prompt"), `${field}.prompt`, p);
  if (prompt !== undefined) step.prompt = prompt;
  const submit = readString(member(body, "submit"), `${field}.submit`, p);
  if (submit !== undefined) step.submit = submit;
  const state = readString(member(body, "blocked_state"), `${field}.blocked_state`, p);
  if (state !== undefined) {
    if (state === "passed" || state === "failed" || state === "running") step.blocked_state = state;
    else p.add(`${field}.blocked_state`, `must be "passed", "failed" or "running", got ${describeValue(state)}`);
  }
  const teams = readStringArray(member(body, "allowed_teams"), `${field}.allowed_teams`, p);
  if (teams !== undefined) step.allowed_teams = teams;
  const fields = readFields(member(body, "fields"), `${field}.fields`, p);
  if (fields !== undefined) step.fields = fields;
  return step;
}

function parseTrigger(body: Val, field: string, p: Problems, common: StepCommon): TriggerStep | undefined {
  const target = member(body, "trigger");
  let pipeline: string | undefined;
  if (isUnset(target)) {
    p.add(`${field}.trigger`, "is required: the slug of the pipeline to trigger");
  } else {
    pipeline = readString(target, `${field}.trigger`, p, { nonEmpty: true });
  }
  const step: TriggerStep = {
    type: "trigger",
    label: readAliasedString(body, ["label", "name"], field, p) ?? "",
    pipeline: pipeline ?? "",
    async: readBool(member(body, "async"), `${field}.async`, p) ?? false,
    ...common,
  };
  const buildVal = member(body, "build");
  if (!isUnset(buildVal)) {
    if (!isMapping(buildVal.v)) {
      p.add(
        `${field}.build`,
        `must be a mapping with message, commit, branch, env or meta_data; got ${describeValue(buildVal.v)}`,
      );
    } else {
      const build: NonNullable<TriggerStep["build"]> = {};
      const message = readString(member(buildVal, "message"), `${field}.build.message`, p);
      if (message !== undefined) build.message = message;
      const commit = readString(member(buildVal, "commit"), `${field}.build.commit`, p);
      if (commit !== undefined) build.commit = commit;
      const branch = readString(member(buildVal, "branch"), `${field}.build.branch`, p);
      if (branch !== undefined) build.branch = branch;
      const env = readEnvMap(member(buildVal, "env"), `${field}.build.env`, p);
      if (env !== undefined) build.env = env;
      const metaData = readStringMap(member(buildVal, "meta_data"), `${field}.build.meta_data`, p);
      if (metaData !== undefined) build.meta_data = metaData;
      step.build = build;
    }
  }
  const parallelism = readInt(member(body, "parallelism"), `${field}.parallelism`, p, {
    min: 1,
    max: STEP_LIMITS.maxParallelism,
  });
  if (parallelism !== undefined) step.parallelism = parallelism;
  const softFail = readSoftFail(member(body, "soft_fail"), `${field}.soft_fail`, p);
  if (softFail !== undefined) step.soft_fail = softFail;
  return pipeline === undefined ? undefined : step;
}

function parseGroup(body: Val, field: string, ctx: Ctx): void {
  const { p } = ctx;
  let label: string | undefined;
  const own = member(body, "group");
  if (!isUnset(own)) {
    label = scalarText(own);
    if (label === undefined)
      p.add(`${field}.group`, `must be the group's label (a string) or ~, got ${describeValue(own.v)}`);
  }
  const aliasLabel = readAliasedString(body, ["label", "name"], field, p);
  const info: GroupInfo = { label: (label || aliasLabel) ?? "" };
  const keyFound = alias(body, ["key", "id", "identifier"], field, p);
  if (keyFound) {
    const key = readKey(keyFound.val, keyFound.field, p);
    if (key !== undefined && ctx.keys.register(key, keyFound.field, field, p, true)) info.key = key;
  }
  const dependsOn = readDependsOn(member(body, "depends_on"), `${field}.depends_on`, p);
  if (dependsOn !== undefined) info.depends_on = dependsOn;
  const condition = readString(member(body, "if"), `${field}.if`, p);
  if (condition !== undefined && condition.trim() !== "") info.if = condition;
  const allow = readBool(member(body, "allow_dependency_failure"), `${field}.allow_dependency_failure`, p);
  if (allow !== undefined) info.allow_dependency_failure = allow;
  const skip = readSkip(member(body, "skip"), `${field}.skip`, p);
  if (skip !== undefined) info.skip = skip;

  const steps = member(body, "steps");
  if (isUnset(steps) || !Array.isArray(steps.v) || steps.v.length === 0) {
    p.add(
      `${field}.steps`,
      isUnset(steps) || Array.isArray(steps.v)
        ? "is required: a group needs a non-empty list of steps"
        : `must be a list of steps, got ${describeValue(steps.v)}`,
    );
    return;
  }
  // A dependency on the group from inside it would be a cycle; checkDependencies reports it per step.
  parseStepList(steps, `${field}.steps`, ctx, info);
}

const DEFAULT_RETRY_RULE: AutomaticRetryRule = { exit_status: "*", signal: "*", signal_reason: "*", limit: 2 };

function readRetry(val: Val | undefined, field: string, p: Problems): ScriptStep["retry"] | undefined {
  if (isUnset(val)) return undefined;
  if (!isMapping(val.v)) {
    return p.add(field, `must be a mapping with \`automatic\` and/or \`manual\`, got ${describeValue(val.v)}`);
  }
  const retry: NonNullable<ScriptStep["retry"]> = {};
  const automatic = member(val, "automatic");
  if (!isUnset(automatic)) {
    const a = automatic.v;
    const afield = `${field}.automatic`;
    if (typeof a === "boolean" || a === "true" || a === "false") {
      retry.automatic = a === true || a === "true" ? [{ ...DEFAULT_RETRY_RULE }] : [];
    } else if (isMapping(a)) {
      const rule = readRetryRule(automatic, afield, p);
      if (rule) retry.automatic = [rule];
    } else if (Array.isArray(a)) {
      const rules: AutomaticRetryRule[] = [];
      let bad = false;
      a.forEach((_, i) => {
        const rule = readRetryRule(item(automatic, i), `${afield}[${i}]`, p);
        if (rule) rules.push(rule);
        else bad = true;
      });
      if (!bad) retry.automatic = rules;
    } else {
      p.add(afield, `must be true, false, a retry rule or a list of retry rules; got ${describeValue(a)}`);
    }
  }
  const manual = member(val, "manual");
  if (!isUnset(manual)) {
    const mfield = `${field}.manual`;
    if (isMapping(manual.v)) {
      const allowed = readBool(member(manual, "allowed"), `${mfield}.allowed`, p);
      const out: NonNullable<NonNullable<ScriptStep["retry"]>["manual"]> = { allowed: allowed ?? true };
      const reason = readString(member(manual, "reason"), `${mfield}.reason`, p);
      if (reason !== undefined) out.reason = reason;
      const permit = readBool(member(manual, "permit_on_passed"), `${mfield}.permit_on_passed`, p);
      if (permit !== undefined) out.permit_on_passed = permit;
      retry.manual = out;
    } else {
      const allowed = readBool(manual, mfield, p);
      if (allowed !== undefined) retry.manual = { allowed };
    }
  }
  return Object.keys(retry).length > 0 ? retry : undefined;
}

function readRetryRule(val: Val, field: string, p: Problems): AutomaticRetryRule | undefined {
  if (!isMapping(val.v)) {
    return p.add(field, `must be a retry rule such as {exit_status: -1, limit: 2}, got ${describeValue(val.v)}`);
  }
  const before = p.count;
  let exitStatus: AutomaticRetryRule["exit_status"] = "*";
  const status = member(val, "exit_status");
  if (!isUnset(status) && status.v !== "*") {
    if (Array.isArray(status.v)) {
      const codes: number[] = [];
      status.v.forEach((_, i) => {
        const n = readInt(item(status, i), `${field}.exit_status[${i}]`, p);
        if (n !== undefined) codes.push(n);
      });
      if (codes.length === 0 && status.v.length === 0) {
        p.add(`${field}.exit_status`, 'must list at least one exit status, or be "*" for any');
      }
      exitStatus = codes;
    } else if (typeof status.v === "number") {
      const n = readInt(status, `${field}.exit_status`, p);
      if (n !== undefined) exitStatus = [n];
    } else {
      p.add(
        `${field}.exit_status`,
        `must be an exit status (an integer, -1 for a lost agent), a list of them, or "*"; got ${describeValue(status.v)}`,
      );
    }
  }
  const limit = readInt(member(val, "limit"), `${field}.limit`, p, { min: 1, max: 10 });
  const rule: AutomaticRetryRule = { exit_status: exitStatus, limit: limit ?? 2 };
  const signal = readString(member(val, "signal"), `${field}.signal`, p);
  if (signal !== undefined) rule.signal = signal;
  const reason = readString(member(val, "signal_reason"), `${field}.signal_reason`, p);
  if (reason !== undefined) rule.signal_reason = reason;
  return p.count > before ? undefined : rule;
}

function readPlugins(val: Val | undefined, field: string, p: Problems): Array<Record<string, unknown>> | undefined {
  if (isUnset(val)) return undefined;
  const out: Array<Record<string, unknown>> = [];
  if (isMapping(val.v)) {
    for (const [name, config] of Object.entries(val.v)) out.push({ [name]: config ?? null });
    return out.length > 0 ? out : undefined;
  }
  if (!Array.isArray(val.v)) {
    return p.add(
      field,
      `must be a list of plugins (such as - docker#v5.12.0: {image: node}), got ${describeValue(val.v)}`,
    );
  }
  const before = p.count;
  val.v.forEach((entry, i) => {
    const efield = `${field}[${i}]`;
    if (typeof entry === "string") {
      if (entry.trim() === "") p.add(efield, "must name a plugin, such as docker#v5.12.0");
      else out.push({ [entry]: null });
      return;
    }
    if (!isMapping(entry)) {
      p.add(efield, `must be a plugin name or a mapping {plugin-name: settings}, got ${describeValue(entry)}`);
      return;
    }
    const names = Object.keys(entry);
    if (names.length !== 1) {
      p.add(
        efield,
        names.length === 0
          ? "is an empty mapping; write {plugin-name: settings}"
          : `must be a mapping with one key, the plugin name, but has ${listWords(names.map((n) => `"${n}"`))}; ` +
              "indent the plugin's settings under its name",
      );
      return;
    }
    const name = names[0] as string;
    out.push({ [name]: entry[name] ?? null });
  });
  if (p.count > before) return undefined;
  return out.length > 0 ? out : undefined;
}

function readMatrixValues(val: Val, field: string, p: Problems): string[] | undefined {
  if (!Array.isArray(val.v)) return p.add(field, `must be a list of values, got ${describeValue(val.v)}`);
  const values: string[] = [];
  let bad = false;
  val.v.forEach((_, i) => {
    const entry = item(val, i);
    const text = scalarText(entry);
    if (text === undefined) {
      bad = true;
      p.add(`${field}[${i}]`, `must be a string, integer or boolean, got ${describeValue(entry.v)}`);
    } else values.push(text);
  });
  return bad ? undefined : values;
}

function readMatrix(val: Val | undefined, field: string, p: Problems): StepMatrix | undefined {
  if (isUnset(val)) return undefined;
  if (Array.isArray(val.v)) {
    const values = readMatrixValues(val, field, p);
    if (values === undefined) return undefined;
    if (values.length === 0) return p.add(field, "must list at least one value");
    return { setup: { "": values } };
  }
  if (!isMapping(val.v)) {
    return p.add(field, `must be a list of values or a mapping with \`setup\`, got ${describeValue(val.v)}`);
  }
  const before = p.count;
  const setupVal = member(val, "setup");
  if (isUnset(setupVal)) return p.add(`${field}.setup`, "is required: a list of values or a mapping of dimensions");
  const setup: Record<string, string[]> = {};
  if (Array.isArray(setupVal.v)) {
    const values = readMatrixValues(setupVal, `${field}.setup`, p);
    if (values !== undefined) setup[""] = values;
  } else if (isMapping(setupVal.v)) {
    const names = Object.keys(setupVal.v);
    if (names.length === 0) p.add(`${field}.setup`, "must name at least one dimension");
    for (const name of names) {
      if (!MATRIX_DIMENSION.test(name)) {
        p.add(`${field}.setup.${name}`, "is not a valid dimension name; use letters, digits and underscores");
        continue;
      }
      const values = readMatrixValues(member(setupVal, name) as Val, `${field}.setup.${name}`, p);
      if (values !== undefined) setup[name] = values;
    }
  } else {
    p.add(`${field}.setup`, `must be a list of values or a mapping of dimensions, got ${describeValue(setupVal.v)}`);
  }
  const matrix: StepMatrix = { setup };
  const adjustmentsVal = member(val, "adjustments");
  if (!isUnset(adjustmentsVal)) {
    if (!Array.isArray(adjustmentsVal.v)) {
      p.add(`${field}.adjustments`, `must be a list of adjustments, got ${describeValue(adjustmentsVal.v)}`);
    } else {
      const dimensions = Object.keys(setup).sort();
      const adjustments: NonNullable<StepMatrix["adjustments"]> = [];
      adjustmentsVal.v.forEach((_, i) => {
        const afield = `${field}.adjustments[${i}]`;
        const adj = item(adjustmentsVal, i);
        if (!isMapping(adj.v)) {
          p.add(afield, `must be a mapping with \`with\`, got ${describeValue(adj.v)}`);
          return;
        }
        const withVal = member(adj, "with");
        if (isUnset(withVal)) {
          p.add(`${afield}.with`, "is required: the combination of values this adjustment applies to");
          return;
        }
        const combo: Record<string, string> = {};
        if (isMapping(withVal.v)) {
          for (const name of Object.keys(withVal.v)) {
            const text = scalarText(member(withVal, name) as Val);
            if (text === undefined) {
              p.add(
                `${afield}.with.${name}`,
                `must be a string, integer or boolean, got ${describeValue(withVal.v[name])}`,
              );
            } else combo[name] = text;
          }
        } else {
          const text = scalarText(withVal);
          if (text === undefined) {
            p.add(
              `${afield}.with`,
              `must be a value or a mapping of dimension values, got ${describeValue(withVal.v)}`,
            );
            return;
          }
          combo[""] = text;
        }
        const named = Object.keys(combo).sort();
        if (named.join("\u0000") !== dimensions.join("\u0000")) {
          const expected = Object.keys(setup).filter((d) => d !== "");
          p.add(
            `${afield}.with`,
            expected.length > 0
              ? `must give a value for each dimension of the setup (${listWords(expected)}) and no others`
              : "must be a single value, as the matrix setup is a plain list",
          );
          return;
        }
        const adjustment: NonNullable<StepMatrix["adjustments"]>[number] = { with: combo };
        const skip = readSkip(member(adj, "skip"), `${afield}.skip`, p);
        if (skip !== undefined) adjustment.skip = skip;
        const softFail = readSoftFail(member(adj, "soft_fail"), `${afield}.soft_fail`, p);
        if (softFail !== undefined) adjustment.soft_fail = softFail;
        adjustments.push(adjustment);
      });
      if (adjustments.length > 0) matrix.adjustments = adjustments;
    }
  }
  return p.count > before ? undefined : matrix;
}

function readFields(val: Val | undefined, field: string, p: Problems): Array<Record<string, unknown>> | undefined {
  if (isUnset(val)) return undefined;
  if (!Array.isArray(val.v))
    return p.add(field, `must be a list of text or select fields, got ${describeValue(val.v)}`);
  const before = p.count;
  const out: Array<Record<string, unknown>> = [];
  const seen = new Set<string>();
  val.v.forEach((_, i) => {
    const ffield = `${field}[${i}]`;
    const entry = item(val, i);
    if (!isMapping(entry.v)) {
      p.add(
        ffield,
        `must be a mapping such as {text: "Release name", key: "release-name"}, got ${describeValue(entry.v)}`,
      );
      return;
    }
    const result: Record<string, unknown> = { ...entry.v };
    const keyVal = member(entry, "key");
    if (isUnset(keyVal)) {
      p.add(`${ffield}.key`, "is required: the meta-data key that stores the field's value");
    } else {
      const key = readString(keyVal, `${ffield}.key`, p, { nonEmpty: true });
      if (key !== undefined) {
        if (!FIELD_KEY.test(key)) {
          p.add(`${ffield}.key`, `may only contain letters, digits, "-", "_" and "/", got ${describeValue(key)}`);
        } else if (seen.has(key)) {
          p.add(`${ffield}.key`, `"${key}" is already the key of another field of this step`);
        } else {
          seen.add(key);
          result.key = key;
        }
      }
    }
    const hasText = Object.hasOwn(entry.v, "text");
    const hasSelect = Object.hasOwn(entry.v, "select");
    if (hasText === hasSelect) {
      p.add(
        ffield,
        hasText ? "has both `text` and `select`; a field is one or the other" : "needs `text:` or `select:`",
      );
      return;
    }
    const kindKey = hasText ? "text" : "select";
    const title = readString(member(entry, kindKey), `${ffield}.${kindKey}`, p);
    if (title !== undefined) result[kindKey] = title;
    for (const flag of ["required", "multiple"]) {
      const b = readBool(member(entry, flag), `${ffield}.${flag}`, p);
      if (b !== undefined) result[flag] = b;
    }
    for (const textKey of ["hint", "format"]) {
      const t = readString(member(entry, textKey), `${ffield}.${textKey}`, p);
      if (t !== undefined) result[textKey] = t;
    }
    const problem = typeof result.format === "string" ? formatProblem(result.format) : null;
    if (problem) p.add(`${ffield}.format`, problem);
    const def = member(entry, "default");
    if (!isUnset(def)) {
      const d = Array.isArray(def.v)
        ? readStringArray(def, `${ffield}.default`, p)
        : readString(def, `${ffield}.default`, p);
      if (d !== undefined) result.default = d;
    }
    if (hasSelect) {
      const options = member(entry, "options");
      if (isUnset(options) || !Array.isArray(options.v) || options.v.length === 0) {
        p.add(`${ffield}.options`, "is required: a non-empty list of {label, value} for the select field");
        return;
      }
      const opts: Array<Record<string, unknown>> = [];
      options.v.forEach((_, j) => {
        const ofield = `${ffield}.options[${j}]`;
        const opt = item(options, j);
        if (!isMapping(opt.v)) {
          p.add(ofield, `must be a mapping {label, value}, got ${describeValue(opt.v)}`);
          return;
        }
        const o: Record<string, unknown> = { ...opt.v };
        for (const k of ["label", "value"]) {
          const t = readString(member(opt, k), `${ofield}.${k}`, p);
          if (t === undefined) {
            if (isUnset(member(opt, k))) p.add(`${ofield}.${k}`, "is required");
          } else o[k] = t;
        }
        opts.push(o);
      });
      result.options = opts;
    }
    out.push(result);
  });
  return p.count > before ? undefined : out;
}
