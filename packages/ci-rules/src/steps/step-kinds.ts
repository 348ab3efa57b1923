/**
 * Parsers of the attributes of each kind of step (command, wait, block/input, trigger), for parse-yaml.ts (which
 * reads the attributes common to every step and parses groups).
 */

import { matrixProblems } from "./matrix.js";
import type { ManualStep, ScriptStep, StepCommon, TriggerStep, WaiterStep } from "./step.js";
import {
  describeValue,
  isMapping,
  isUnset,
  member,
  type Problems,
  readAgentRules,
  readBool,
  readEnvMap,
  readInt,
  readSoftFail,
  readString,
  readStringArray,
  readStringMap,
  readStringOrList,
  scalarText,
  type Val,
} from "./step-checks.js";
import { STEP_LIMITS } from "./step-limits.js";
import { alias, readAliasedString, readFields, readMatrix, readPlugins, readRetry } from "./step-options.js";
import { readSignature, signedStepOf } from "./step-signature.js";

/** The largest `concurrency` limit, and the longest `concurrency_group` name. */
const MAX_CONCURRENCY = 10_000;
const MAX_CONCURRENCY_GROUP_LENGTH = 255;

/** The attributes of a command step. */
export function parseScript(body: Val, field: string, p: Problems, common: StepCommon): ScriptStep {
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
    } else {
      step.matrix = matrix;
      for (const problem of matrixProblems(step, field)) p.add(problem.field, problem.code);
    }
  }
  const signature = readSignature(member(body, "signature"), `${field}.signature`, p);
  const signedStep = signature ? signedStepOf(body) : undefined;
  if (signature && signedStep) step.signed = { signature, step: signedStep };
  return step;
}

export function parseWaiter(body: Val, field: string, p: Problems, common: StepCommon): WaiterStep {
  const step: WaiterStep = { type: "waiter", ...common };
  const cont = readBool(member(body, "continue_on_failure"), `${field}.continue_on_failure`, p);
  if (cont !== undefined) step.continue_on_failure = cont;
  return step;
}

export function parseManual(
  body: Val,
  field: string,
  p: Problems,
  common: StepCommon,
  kind: "block" | "input",
): ManualStep {
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

export function parseTrigger(body: Val, field: string, p: Problems, common: StepCommon): TriggerStep | undefined {
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
