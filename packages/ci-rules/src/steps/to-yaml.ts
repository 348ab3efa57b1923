/**
 * Writes steps back as canonical pipeline YAML, so that a pipeline defined with the visual form also has a
 * `configuration`. The output is chosen so that `parsePipelineYaml(stepsToYaml(steps, env))` gives back exactly
 * `{steps, env}` for any steps that parsePipelineYaml or parseVisualSteps produce:
 * - consecutive steps from the same group (`group`) are wrapped in a group step again (with only its label and
 *   key; the group's other attributes were already merged into its steps);
 * - a waiter with nothing else set is the scalar `wait`;
 * - agents are written as a mapping when every rule is "k=v" with distinct keys, else as a list;
 * - `depends_on` entries are plain keys unless `allow_failure` is true;
 * - a trigger step's `concurrency` has no YAML form and is left out.
 */
import { stringify } from "yaml";
import type { ManualStep, PipelineStep, ScriptStep, StepCommon, StepMatrix, TriggerStep, WaiterStep } from "./step.js";

type YamlMap = Record<string, unknown>;

/** Canonical pipeline YAML for `steps` and the pipeline-level `env`. */
export function stepsToYaml(steps: PipelineStep[], env?: Record<string, string>): string {
  const doc: YamlMap = {};
  if (env && Object.keys(env).length > 0) doc.env = { ...env };
  doc.steps = groupSteps(steps);
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}

function sameGroup(a: PipelineStep["group"], b: PipelineStep["group"]): boolean {
  if (!a || !b) return false;
  return a.label === b.label && a.key === b.key;
}

function groupSteps(steps: PipelineStep[]): unknown[] {
  const out: unknown[] = [];
  let i = 0;
  while (i < steps.length) {
    const step = steps[i] as PipelineStep;
    const group = step.group;
    if (!group) {
      out.push(stepToYaml(step));
      i++;
      continue;
    }
    const members: unknown[] = [];
    while (i < steps.length && sameGroup((steps[i] as PipelineStep).group, group)) {
      members.push(stepToYaml(steps[i] as PipelineStep));
      i++;
    }
    const g: YamlMap = { group: group.label === "" ? null : group.label };
    if (group.key !== undefined) g.key = group.key;
    g.steps = members;
    out.push(g);
  }
  return out;
}

function stepToYaml(step: PipelineStep): unknown {
  switch (step.type) {
    case "script":
      return scriptToYaml(step);
    case "waiter":
      return waiterToYaml(step);
    case "manual":
      return manualToYaml(step);
    case "trigger":
      return triggerToYaml(step);
  }
}

/** Adds the attributes every step type may have, in a fixed order. */
function addCommon(out: YamlMap, step: StepCommon): void {
  if (step.key !== undefined) out.key = step.key;
  if (step.depends_on !== undefined) {
    out.depends_on = step.depends_on.map((d) => (d.allow_failure ? { step: d.step, allow_failure: true } : d.step));
  }
  if (step.allow_dependency_failure !== undefined) out.allow_dependency_failure = step.allow_dependency_failure;
  if (step.if !== undefined) out.if = step.if;
  if (step.branch_configuration !== undefined) out.branches = step.branch_configuration;
  if (step.skip !== undefined) out.skip = step.skip;
}

function softFailToYaml(softFail: true | Array<number | "*">): unknown {
  return softFail === true ? true : softFail.map((status) => ({ exit_status: status }));
}

function agentsToYaml(rules: string[]): unknown {
  const map: Record<string, string> = {};
  for (const rule of rules) {
    const eq = rule.indexOf("=");
    if (eq <= 0) return [...rules];
    const name = rule.slice(0, eq);
    if (Object.hasOwn(map, name) || name === "__proto__") return [...rules];
    map[name] = rule.slice(eq + 1);
  }
  return map;
}

function matrixToYaml(matrix: StepMatrix): unknown {
  const dims = Object.keys(matrix.setup);
  const anonymous = dims.length === 1 && dims[0] === "";
  const setup = anonymous ? [...(matrix.setup[""] ?? [])] : structuredClone(matrix.setup);
  if (!matrix.adjustments) return anonymous ? setup : { setup };
  const adjustments = matrix.adjustments.map((adj) => {
    const out: YamlMap = { with: anonymous ? adj.with[""] : { ...adj.with } };
    if (adj.skip !== undefined) out.skip = adj.skip;
    if (adj.soft_fail !== undefined) out.soft_fail = softFailToYaml(adj.soft_fail);
    return out;
  });
  return { setup, adjustments };
}

function scriptToYaml(step: ScriptStep): YamlMap {
  const out: YamlMap = {};
  if (step.name !== "") out.label = step.name;
  if (step.command !== "" || !step.plugins) out.command = step.command;
  if (step.plugins) out.plugins = structuredClone(step.plugins);
  addCommon(out, step);
  if (step.agent_query_rules.length > 0) out.agents = agentsToYaml(step.agent_query_rules);
  if (step.env !== undefined) out.env = { ...step.env };
  if (step.artifact_paths !== undefined) out.artifact_paths = step.artifact_paths;
  if (step.timeout_in_minutes !== undefined) out.timeout_in_minutes = step.timeout_in_minutes;
  if (step.parallelism !== undefined) out.parallelism = step.parallelism;
  if (step.concurrency !== undefined) out.concurrency = step.concurrency;
  if (step.concurrency_group !== undefined) out.concurrency_group = step.concurrency_group;
  if (step.concurrency_method !== undefined) out.concurrency_method = step.concurrency_method;
  if (step.priority !== undefined) out.priority = step.priority;
  if (step.retry !== undefined) {
    const retry: YamlMap = {};
    if (step.retry.automatic !== undefined) {
      retry.automatic = step.retry.automatic.map((rule) => {
        const out: YamlMap = { exit_status: rule.exit_status === "*" ? "*" : [...rule.exit_status] };
        if (rule.signal !== undefined) out.signal = rule.signal;
        if (rule.signal_reason !== undefined) out.signal_reason = rule.signal_reason;
        out.limit = rule.limit;
        return out;
      });
    }
    if (step.retry.manual !== undefined) {
      const { allowed, reason, permit_on_passed } = step.retry.manual;
      const manual: YamlMap = { allowed };
      if (reason !== undefined) manual.reason = reason;
      if (permit_on_passed !== undefined) manual.permit_on_passed = permit_on_passed;
      retry.manual = manual;
    }
    out.retry = retry;
  }
  if (step.soft_fail !== undefined) out.soft_fail = softFailToYaml(step.soft_fail);
  if (step.cancel_on_build_failing !== undefined) out.cancel_on_build_failing = step.cancel_on_build_failing;
  if (step.matrix !== undefined) out.matrix = matrixToYaml(step.matrix);
  return out;
}

function waiterToYaml(step: WaiterStep): unknown {
  const out: YamlMap = { wait: null };
  addCommon(out, step);
  if (step.continue_on_failure !== undefined) out.continue_on_failure = step.continue_on_failure;
  return Object.keys(out).length === 1 ? "wait" : out;
}

function manualToYaml(step: ManualStep): YamlMap {
  const out: YamlMap = step.is_input ? { input: step.label } : { block: step.label };
  addCommon(out, step);
  if (step.prompt !== undefined) out.prompt = step.prompt;
  if (step.submit !== undefined) out.submit = step.submit;
  if (step.blocked_state !== undefined) out.blocked_state = step.blocked_state;
  if (step.allowed_teams !== undefined) out.allowed_teams = [...step.allowed_teams];
  if (step.fields !== undefined) out.fields = structuredClone(step.fields);
  return out;
}

function triggerToYaml(step: TriggerStep): YamlMap {
  const out: YamlMap = { trigger: step.pipeline };
  if (step.label !== "") out.label = step.label;
  addCommon(out, step);
  if (step.async) out.async = true;
  if (step.build !== undefined) {
    const build: YamlMap = {};
    for (const name of ["message", "commit", "branch", "env", "meta_data"] as const) {
      const value = step.build[name];
      if (value !== undefined) build[name] = typeof value === "string" ? value : { ...value };
    }
    out.build = build;
  }
  if (step.parallelism !== undefined) out.parallelism = step.parallelism;
  if (step.soft_fail !== undefined) out.soft_fail = softFailToYaml(step.soft_fail);
  return out;
}
