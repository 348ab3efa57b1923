/**
 * Validates the visual form of a pipeline (the REST create/update body's `steps` array) into the step model.
 *
 * Step types and fields (docs/compatibility.md#pipelines):
 * - script: `type`, `name`, `command`, optional `artifact_paths`, `branch_configuration`, `env`,
 *   `timeout_in_minutes`, `agent_query_rules`, `concurrency` (+ `concurrency_group`, required with it, as in YAML),
 *   `parallelism`;
 * - waiter: `type`;
 * - manual: `type`, optional `label`;
 * - trigger: `type`, `label`, `trigger_project_slug` (required), `trigger_commit`, `trigger_branch`,
 *   `trigger_async`.
 *
 * Leniencies, so that a step read back from the REST API can be sent again: `label` for a script's `name`; for a
 * trigger `pipeline`, `build: {message, commit, branch, env}` and `async` (the `trigger_*` fields win when both are
 * given); on every type `key`, `depends_on`, `if` and `allow_dependency_failure`; type aliases `command`, `wait`,
 * `block` and `input`. A missing `name`/`label` is "". Numbers and booleans are taken as their text where a string
 * is expected (names, env values); numbers must be numbers. Unknown fields are ignored. The pipeline's own `env` is
 * the caller's business, so the result's `env` is always {}.
 */
import { branchFilterProblem } from "../branch-filter.js";
import type { ManualStep, PipelineStep, ScriptStep, StepCommon, StepsResult, TriggerStep, WaiterStep } from "./step.js";
import { checkVisualAttributes } from "./step-attributes.js";
import {
  checkDependencies,
  describeValue,
  isMapping,
  isUnset,
  KeyRegistry,
  member,
  Problems,
  readAgentRules,
  readBool,
  readDependsOn,
  readEnvMap,
  readInt,
  readKey,
  readString,
  readStringOrList,
  type StepEntry,
  type Val,
} from "./step-checks.js";
import { STEP_LIMITS } from "./step-limits.js";
import { readPlugins } from "./step-options.js";

type VisualKind = "script" | "waiter" | "manual" | "input" | "trigger";

const KIND_BY_TYPE: Record<string, VisualKind> = {
  script: "script",
  command: "script",
  waiter: "waiter",
  wait: "waiter",
  manual: "manual",
  block: "manual",
  input: "input",
  trigger: "trigger",
};

/** Validates the visual `steps` array of a REST pipeline body. */
export function parseVisualSteps(input: unknown): StepsResult {
  if (!Array.isArray(input)) {
    return {
      ok: false,
      errors: [{ field: "steps", code: `must be a list of step objects, got ${describeValue(input)}` }],
    };
  }
  if (input.length === 0) {
    return { ok: false, errors: [{ field: "steps", code: "must contain at least one step" }] };
  }
  const p = new Problems();
  const keys = new KeyRegistry();
  const entries: StepEntry[] = [];
  input.forEach((raw, i) => {
    const field = `steps[${i}]`;
    const step = parseVisualStep({ v: raw, raw: undefined }, field, p, keys);
    if (step) entries.push({ step, field });
  });
  if (p.count === 0) checkDependencies(entries, keys, p);
  if (p.count > 0) return { ok: false, errors: p.errors };
  return { ok: true, steps: entries.map((e) => e.step), env: {} };
}

function parseVisualStep(val: Val, field: string, p: Problems, keys: KeyRegistry): PipelineStep | undefined {
  if (!isMapping(val.v)) {
    return p.add(field, `must be a step object with a \`type\`, got ${describeValue(val.v)}`);
  }
  const typeVal = member(val, "type");
  if (isUnset(typeVal)) {
    return p.add(`${field}.type`, 'is required: one of "script", "waiter", "manual" or "trigger"');
  }
  const kind = typeof typeVal.v === "string" ? KIND_BY_TYPE[typeVal.v] : undefined;
  if (!kind) {
    return p.add(`${field}.type`, `must be "script", "waiter", "manual" or "trigger", got ${describeValue(typeVal.v)}`);
  }
  checkVisualAttributes(val, field, kind, p);
  if (!isUnset(member(val, "notify"))) {
    // The notifications service reads notify from YAML configuration only (docs/notifications.md#notify).
    p.add(`${field}.notify`, "is taken in YAML configuration only, not in the visual steps");
  }
  const common = parseVisualCommon(val, field, p, keys);
  switch (kind) {
    case "script":
      return parseScript(val, field, p, common);
    case "waiter": {
      const step: WaiterStep = { type: "waiter", ...common };
      const cont = readBool(member(val, "continue_on_failure"), `${field}.continue_on_failure`, p);
      if (cont !== undefined) step.continue_on_failure = cont;
      return step;
    }
    case "manual":
    case "input": {
      const step: ManualStep = {
        type: "manual",
        label: readString(member(val, "label"), `${field}.label`, p) ?? "",
        ...common,
      };
      if (kind === "input") step.is_input = true;
      const prompt = readString(member(val, "prompt"), `${field}.prompt`, p);
      if (prompt !== undefined) step.prompt = prompt;
      return step;
    }
    case "trigger":
      return parseTrigger(val, field, p, common);
  }
}

function parseVisualCommon(val: Val, field: string, p: Problems, keys: KeyRegistry): StepCommon {
  const common: StepCommon = {};
  const keyVal = member(val, "key");
  if (!isUnset(keyVal)) {
    const key = readKey(keyVal, `${field}.key`, p);
    if (key !== undefined && keys.register(key, `${field}.key`, field, p)) common.key = key;
  }
  const deps = readDependsOn(member(val, "depends_on"), `${field}.depends_on`, p);
  if (deps !== undefined) common.depends_on = deps;
  const allow = readBool(member(val, "allow_dependency_failure"), `${field}.allow_dependency_failure`, p);
  if (allow !== undefined) common.allow_dependency_failure = allow;
  const condition = readString(member(val, "if"), `${field}.if`, p);
  if (condition !== undefined && condition.trim() !== "") common.if = condition;
  const branches = readString(member(val, "branch_configuration"), `${field}.branch_configuration`, p);
  if (branches !== undefined && branches.trim() !== "") {
    const problem = branchFilterProblem(branches);
    if (problem) p.add(`${field}.branch_configuration`, `is not a valid branch filter: it ${problem}`);
    else if (common.if !== undefined) {
      p.add(
        `${field}.branch_configuration`,
        "cannot be used together with `if` on the same step; put the branch condition into `if`",
      );
    } else common.branch_configuration = branches;
  }
  return common;
}

function parseScript(val: Val, field: string, p: Problems, common: StepCommon): ScriptStep {
  const nameVal = isUnset(member(val, "name")) ? member(val, "label") : member(val, "name");
  const nameField = isUnset(member(val, "name")) && !isUnset(member(val, "label")) ? "label" : "name";
  const commandVal = member(val, "command");
  let command: string | undefined;
  if (isUnset(commandVal)) {
    p.add(`${field}.command`, "is required: the command the step runs");
  } else {
    command = readStringOrList(commandVal, `${field}.command`, p, "\n");
    if (command !== undefined && command.trim() === "") {
      p.add(`${field}.command`, "must not be empty");
    }
  }
  const step: ScriptStep = {
    type: "script",
    name: readString(nameVal, `${field}.${nameField}`, p) ?? "",
    command: command ?? "",
    agent_query_rules: readAgentRules(member(val, "agent_query_rules"), `${field}.agent_query_rules`, p) ?? [],
    ...common,
  };
  const artifacts = readStringOrList(member(val, "artifact_paths"), `${field}.artifact_paths`, p, ";");
  if (artifacts !== undefined && artifacts !== "") step.artifact_paths = artifacts;
  const env = readEnvMap(member(val, "env"), `${field}.env`, p);
  if (env !== undefined) step.env = env;
  const timeout = readInt(member(val, "timeout_in_minutes"), `${field}.timeout_in_minutes`, p, { min: 1 });
  if (timeout !== undefined) step.timeout_in_minutes = timeout;
  const concurrency = readInt(member(val, "concurrency"), `${field}.concurrency`, p, { min: 1 });
  const group = readString(member(val, "concurrency_group"), `${field}.concurrency_group`, p, { nonEmpty: true });
  if (concurrency !== undefined && isUnset(member(val, "concurrency_group"))) {
    p.add(`${field}.concurrency`, "requires `concurrency_group`, the name shared by the steps this limit applies to");
  }
  if (group !== undefined && isUnset(member(val, "concurrency"))) {
    p.add(`${field}.concurrency_group`, "requires `concurrency`, the number of jobs of the group that may run at once");
  }
  if (concurrency !== undefined) step.concurrency = concurrency;
  if (group !== undefined) step.concurrency_group = group;
  const parallelism = readInt(member(val, "parallelism"), `${field}.parallelism`, p, {
    min: 1,
    max: STEP_LIMITS.maxParallelism,
  });
  if (parallelism !== undefined) step.parallelism = parallelism;
  // go-buildkite's Step sends them (a map of plugin → settings); the agent runs them as from YAML.
  const plugins = readPlugins(member(val, "plugins"), `${field}.plugins`, p);
  if (plugins !== undefined) step.plugins = plugins;
  return step;
}

function parseTrigger(val: Val, field: string, p: Problems, common: StepCommon): TriggerStep | undefined {
  const slugField =
    isUnset(member(val, "trigger_project_slug")) && !isUnset(member(val, "pipeline"))
      ? "pipeline"
      : "trigger_project_slug";
  const slugVal = member(val, slugField);
  let pipeline: string | undefined;
  if (isUnset(slugVal)) {
    p.add(`${field}.trigger_project_slug`, "is required: the slug of the pipeline to trigger");
  } else {
    pipeline = readString(slugVal, `${field}.${slugField}`, p, { nonEmpty: true });
  }
  const asyncField = isUnset(member(val, "trigger_async")) ? "async" : "trigger_async";
  const step: TriggerStep = {
    type: "trigger",
    label: readString(member(val, "label"), `${field}.label`, p) ?? "",
    pipeline: pipeline ?? "",
    async: readBool(member(val, asyncField), `${field}.${asyncField}`, p) ?? false,
    ...common,
  };
  const build: NonNullable<TriggerStep["build"]> = {};
  const buildVal = member(val, "build");
  if (!isUnset(buildVal)) {
    if (!isMapping(buildVal.v)) {
      p.add(
        `${field}.build`,
        `must be an object with message, commit, branch or env; got ${describeValue(buildVal.v)}`,
      );
    } else {
      for (const name of ["message", "commit", "branch"] as const) {
        const text = readString(member(buildVal, name), `${field}.build.${name}`, p);
        if (text !== undefined) build[name] = text;
      }
      const env = readEnvMap(member(buildVal, "env"), `${field}.build.env`, p);
      if (env !== undefined) build.env = env;
    }
  }
  const commit = readString(member(val, "trigger_commit"), `${field}.trigger_commit`, p);
  if (commit !== undefined) build.commit = commit;
  const branch = readString(member(val, "trigger_branch"), `${field}.trigger_branch`, p);
  if (branch !== undefined) build.branch = branch;
  if (Object.keys(build).length > 0) step.build = build;
  const parallelism = readInt(member(val, "parallelism"), `${field}.parallelism`, p, {
    min: 1,
    max: STEP_LIMITS.maxParallelism,
  });
  if (parallelism !== undefined) step.parallelism = parallelism;
  return pipeline === undefined ? undefined : step;
}
