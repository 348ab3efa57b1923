/**
 * Parses pipeline YAML (the REST `configuration` string) into the step model, following docs/compatibility.md#pipeline-yaml
 * and Buildkite's pipeline schema. A pure function: no I/O, no clock.
 *
 * Decisions where B7 leaves room:
 * - Top level: a mapping with `steps:` (plus `env:`, `agents:`, `notify:`; other keys are ignored) or a bare list
 *   of steps. `agents:` applies to each command step that sets no agents of its own. `notify:` (../notify/notify.ts).
 * - Groups are flattened: their steps take the group's place in the list, and each carries
 *   `group: {label, key?}`. The group's `depends_on` is added to each of its steps' own, its `if` is and-ed with
 *   each step's (`(group) && (step)`), and its `allow_dependency_failure` and `skip` apply to steps that do not set
 *   them. A group's key is a key like a step's (unique, not UUID-shaped) and `depends_on` may name it, meaning all of
 *   its steps. A step with `branches:` inside a group with `if:` is refused, as `branches` + `if` is on one step.
 *   Groups cannot be nested. `branches:` on a group is refused; `notify:` is refused on anything but a command step.
 * - Input steps are block steps with `is_input: true`; `block:`/`input:` give the label, else `label`/`name`.
 * - `retry.automatic: true` is `[{exit_status: "*", signal: "*", signal_reason: "*", limit: 2}]` (B7), `false` is
 *   `[]`; a rule without `exit_status` matches any ("*"), and without `limit` gets 2.
 * - `depends_on: ~` and `depends_on: []` are kept as `[]` ("explicitly none"), distinct from absent.
 * - Scalars in string positions (labels, env values, agent tags, matrix values) keep their source text, as go-yaml
 *   does for string fields: `VERSION: 1.10` is "1.10", not "1.1".
 * - Booleans accept true/false and the strings "true"/"false" (as Buildkite's schema does), nothing else.
 * - Plugin-only steps have `command: ""`. An attribute a step does not have is refused naming it
 *   (./step-attributes.ts): nothing is accepted and ignored. Wrong types are errors.
 * - The nested forms of Buildkite's schema are accepted: `- wait: {continue_on_failure: true}`,
 *   `- block: {prompt: ...}`, `- command: {command: ...}`, `- trigger: {trigger: slug, ...}`.
 */

import { branchFilterProblem } from "../branch-filter.js";
import type { NotifyRule } from "../notify/notify.js";
import { readBuildNotify, readStepNotify } from "../notify/notify.js";
import type { PipelineStep, StepCommon, StepError, StepsResult } from "./step.js";
import { checkAttributes } from "./step-attributes.js";
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
  readKey,
  readString,
  readStringOrList,
  type StepEntry,
  scalarText,
  type Val,
} from "./step-checks.js";
import { parseManual, parseScript, parseTrigger, parseWaiter } from "./step-kinds.js";
import { STEP_LIMITS } from "./step-limits.js";
import { alias, readAliasedString, readSkip } from "./step-options.js";
import { loadYaml } from "./yaml-load.js";

export { nestingDepth } from "./yaml-load.js";

export const MISSING_STEPS = "Step configuration is missing, expected a top-level `steps:` list";

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
  uploaded: boolean;
}

/** Options of parsePipelineYaml. */
export interface ParseOptions {
  /**
   * Keys of steps and groups that already exist (a pipeline upload adds steps to a running build): new steps may
   * depend on them and may not declare them again.
   */
  existingKeys?: readonly string[];
  /** A pipeline upload's document: `notify:` is refused in it (docs/notifications.md#notify). */
  uploaded?: boolean;
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
  let notify: NotifyRule[] = [];

  if (root.v === null || root.v === undefined) return fail([{ field: "configuration", code: MISSING_STEPS }]);
  if (Array.isArray(root.v)) {
    stepsVal = root;
    stepsField = "configuration";
  } else if (isMapping(root.v)) {
    env = readEnvMap(member(root, "env"), "configuration.env", p) ?? {};
    defaultAgents = readAgentRules(member(root, "agents"), "configuration.agents", p);
    notify = readBuildNotify(root, p, options.uploaded === true);
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
  const ctx: Ctx = { p, keys, entries: [], uploaded: options.uploaded === true };
  parseStepList(stepsVal, stepsField, ctx, undefined);
  if (p.count === 0) checkDependencies(ctx.entries, ctx.keys, p);
  if (p.count > 0) return fail(p.errors);

  const steps: PipelineStep[] = ctx.entries.map((entry) => entry.step);
  if (defaultAgents && defaultAgents.length > 0) {
    for (const step of steps) {
      if (step.type === "script" && step.agent_query_rules.length === 0) step.agent_query_rules = [...defaultAgents];
    }
  }
  return { ok: true, steps, env, notify };
}

function fail(errors: StepError[]): StepsResult {
  return { ok: false, errors };
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

  checkAttributes(body, field, kind === "script" ? "command" : kind === "waiter" ? "wait" : kind, p);
  const stepNotify = readStepNotify(body, field, kind, p, ctx.uploaded);
  if (kind === "group") {
    if (group) {
      p.add(field, "is a group inside a group; groups cannot be nested, move its steps into the outer group");
      return;
    }
    parseGroup(body, field, ctx);
    return;
  }
  const step = buildStep(kind, body, field, ctx);
  if (step?.type === "script" && stepNotify) step.notify = stepNotify;
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
