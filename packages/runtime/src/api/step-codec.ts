/**
 * The one conversion between a pipeline step of the model (PipelineStep of @conveyor/ci-rules, what the pipelines
 * service parses and stores) and its wire form (ci.pipelines.v1.PipelineStep, proto/ci/pipelines/v1/steps.proto).
 * The pipelines service encodes the steps of the pipelines it answers with; the builds service (which turns them
 * into jobs) and the gateway (which renders the REST `steps` array) decode them. Every value the model can hold
 * survives the round trip (step-codec.test.ts), so the wire changes nothing a step means.
 *
 * Decoding writes each object's keys in the order the YAML parser (packages/ci-rules/src/steps/) writes them,
 * because the REST `steps` array passes `retry`, `matrix`, `plugins` and `fields` through as they are: with the
 * parser's order, a step reads back byte for byte as it read when steps crossed the wire as JSON.
 */

import { create, fromJson, type JsonValue, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type {
  AutomaticRetryRule,
  ManualStep,
  PipelineStep,
  ScriptStep,
  StepCommon,
  StepMatrix,
  TriggerStep,
  WaiterStep,
} from "@conveyor/ci-rules";
import * as wire from "@conveyor/proto/pipelines";
import { enumNames } from "./enum-names.js";

type Init<S extends Parameters<typeof create>[0]> = MessageInitShape<S>;
type SoftFailValue = NonNullable<ScriptStep["soft_fail"]>;
type SkipValue = NonNullable<StepCommon["skip"]>;
type Retry = NonNullable<ScriptStep["retry"]>;
type Adjustment = NonNullable<StepMatrix["adjustments"]>[number];

/** The rule `retry: {automatic: true}` stands for, whose keys the parser writes in this order. */
const DEFAULT_RETRY_RULE: Readonly<AutomaticRetryRule> = {
  exit_status: "*",
  signal: "*",
  signal_reason: "*",
  limit: 2,
};

/** A pipeline step as the wire carries it. */
export function stepMessage(step: PipelineStep): wire.PipelineStep {
  return create(wire.PipelineStepSchema, {
    key: step.key,
    dependsOn: step.depends_on && {
      dependencies: step.depends_on.map((d) => ({ step: d.step, allowFailure: d.allow_failure })),
    },
    allowDependencyFailure: step.allow_dependency_failure,
    if: step.if,
    branchConfiguration: step.branch_configuration,
    skip: skipInit(step.skip),
    group: step.group && { label: step.group.label, key: step.group.key },
    kind: kindInit(step),
  });
}

/** Pipeline steps as the wire carries them, in their order. */
export function stepMessages(steps: readonly PipelineStep[]): wire.PipelineStep[] {
  return steps.map(stepMessage);
}

/** A pipeline step from the wire; throws when the message names no kind of step (only a broken sender omits it). */
export function stepFromMessage(message: wire.PipelineStep): PipelineStep {
  const { kind } = message;
  switch (kind.case) {
    case "command":
      return withGroup(scriptFrom(kind.value, commonFrom(message)), message);
    case "wait":
      return withGroup(waiterFrom(kind.value, commonFrom(message)), message);
    case "block":
      return withGroup(manualFrom(kind.value, commonFrom(message)), message);
    case "trigger":
      return withGroup(triggerFrom(kind.value, commonFrom(message)), message);
    default:
      throw new Error("A pipeline step message names no kind of step (command, wait, block or trigger)");
  }
}

/** Pipeline steps from the wire, in their order. */
export function stepsFromMessages(messages: readonly wire.PipelineStep[]): PipelineStep[] {
  return messages.map(stepFromMessage);
}

// Encoding: the model to init shapes of the wire messages.

function kindInit(step: PipelineStep): NonNullable<Init<typeof wire.PipelineStepSchema>["kind"]> {
  switch (step.type) {
    case "script":
      return { case: "command", value: commandInit(step) };
    case "waiter":
      return { case: "wait", value: { continueOnFailure: step.continue_on_failure } };
    case "manual":
      return { case: "block", value: blockInit(step) };
    case "trigger":
      return { case: "trigger", value: triggerInit(step) };
    default: {
      const unknown: { type?: unknown } = step;
      throw new Error(`A pipeline step of type ${JSON.stringify(unknown.type)} has no wire form`);
    }
  }
}

function commandInit(step: ScriptStep): Init<typeof wire.CommandStepSchema> {
  return {
    name: step.name,
    command: step.command,
    artifactPaths: step.artifact_paths,
    env: step.env && { values: step.env },
    timeoutInMinutes: int64(step.timeout_in_minutes),
    agentQueryRules: step.agent_query_rules,
    concurrency: step.concurrency,
    concurrencyGroup: step.concurrency_group,
    concurrencyMethod: CONCURRENCY_METHODS.valueOf(step.concurrency_method),
    parallelism: step.parallelism,
    priority: int64(step.priority),
    retry: step.retry && {
      automatic: step.retry.automatic && { rules: step.retry.automatic.map(retryRuleInit) },
      manual: step.retry.manual && {
        allowed: step.retry.manual.allowed,
        reason: step.retry.manual.reason,
        permitOnPassed: step.retry.manual.permit_on_passed,
      },
    },
    softFail: softFailInit(step.soft_fail),
    cancelOnBuildFailing: step.cancel_on_build_failing,
    plugins: step.plugins && { plugins: step.plugins.map(pluginInit) },
    matrix: step.matrix && matrixInit(step.matrix),
    signedStepJson: step.signed && JSON.stringify(step.signed.step),
  };
}

function retryRuleInit(rule: AutomaticRetryRule): Init<typeof wire.AutomaticRetryRuleSchema> {
  return {
    exitStatus:
      rule.exit_status === "*"
        ? { case: "anyExitStatus", value: {} }
        : { case: "exitStatuses", value: { exitStatuses: rule.exit_status.map(BigInt) } },
    signal: rule.signal,
    signalReason: rule.signal_reason,
    limit: rule.limit,
  };
}

/** One `plugins` entry, `{ "name#version": configuration }`: the parser writes exactly one plugin per entry. */
function pluginInit(entry: Record<string, unknown>): Init<typeof wire.StepPluginSchema> {
  const names = Object.keys(entry);
  const name = names[0];
  if (name === undefined || names.length > 1) {
    throw new Error(`A plugins entry holds one plugin ({name: configuration}), not ${names.length}`);
  }
  // The model types a configuration as unknown, but it is JSON: parsed from YAML and stored as JSON text.
  return { name, configuration: fromJson(ValueSchema, (entry[name] ?? null) as JsonValue) };
}

function matrixInit(matrix: StepMatrix): Init<typeof wire.StepMatrixSchema> {
  const setup: Record<string, Init<typeof wire.StringListSchema>> = {};
  for (const [dimension, values] of Object.entries(matrix.setup)) setup[dimension] = { values };
  return {
    setup,
    adjustments: matrix.adjustments && {
      adjustments: matrix.adjustments.map((a) => ({
        with: a.with,
        skip: skipInit(a.skip),
        softFail: softFailInit(a.soft_fail),
      })),
    },
  };
}

function blockInit(step: ManualStep): Init<typeof wire.BlockStepSchema> {
  return {
    label: step.label,
    isInput: step.is_input,
    prompt: step.prompt,
    blockedState: BLOCKED_STATES.valueOf(step.blocked_state),
    // Field definitions are JSON objects for the same reason as a plugin's configuration (pluginInit).
    fields: step.fields && { fields: step.fields as wire.BlockFields["fields"] },
    submit: step.submit,
    allowedTeams: step.allowed_teams && { values: step.allowed_teams },
  };
}

function triggerInit(step: TriggerStep): Init<typeof wire.TriggerStepSchema> {
  const { build } = step;
  return {
    label: step.label,
    pipeline: step.pipeline,
    build: build && {
      message: build.message,
      branch: build.branch,
      commit: build.commit,
      env: build.env && { values: build.env },
      metaData: build.meta_data && { values: build.meta_data },
    },
    async: step.async,
    concurrency: step.concurrency,
    parallelism: step.parallelism,
    softFail: softFailInit(step.soft_fail),
  };
}

function skipInit(skip: SkipValue | undefined): Init<typeof wire.StepSkipSchema> | undefined {
  if (skip === undefined) return undefined;
  return { value: typeof skip === "string" ? { case: "reason", value: skip } : { case: "skipped", value: skip } };
}

function softFailInit(softFail: SoftFailValue | undefined): Init<typeof wire.SoftFailSchema> | undefined {
  if (softFail === undefined) return undefined;
  if (softFail === true) return { value: { case: "everyFailure", value: {} } };
  const statuses = softFail.map(
    (s): Init<typeof wire.SoftFailStatusSchema> => ({
      value: s === "*" ? { case: "anyExitStatus", value: {} } : { case: "exitStatus", value: BigInt(s) },
    }),
  );
  return { value: { case: "exitStatuses", value: { statuses } } };
}

function int64(n: number | undefined): bigint | undefined {
  return n === undefined ? undefined : BigInt(n);
}

// Decoding: the wire messages to the model, keys in the parser's order.

/** Assigns `value` to `out[key]` unless it is undefined, so absent attributes stay absent. */
function put<T extends object, K extends keyof T>(out: T, key: K, value: T[K] | undefined): void {
  if (value !== undefined) out[key] = value;
}

/** The attributes every step has, but its group, which the parser adds after the kind's own attributes. */
function commonFrom(m: wire.PipelineStep): StepCommon {
  const common: StepCommon = {};
  put(common, "key", m.key);
  put(
    common,
    "depends_on",
    m.dependsOn?.dependencies.map((d) => ({ step: d.step, allow_failure: d.allowFailure })),
  );
  put(common, "allow_dependency_failure", m.allowDependencyFailure);
  put(common, "if", m.if);
  put(common, "branch_configuration", m.branchConfiguration);
  put(common, "skip", skipFrom(m.skip));
  return common;
}

function withGroup<S extends PipelineStep>(step: S, m: wire.PipelineStep): S {
  if (m.group)
    step.group = m.group.key === undefined ? { label: m.group.label } : { label: m.group.label, key: m.group.key };
  return step;
}

function scriptFrom(c: wire.CommandStep, common: StepCommon): ScriptStep {
  const step: ScriptStep = {
    type: "script",
    name: c.name,
    command: c.command,
    agent_query_rules: [...c.agentQueryRules],
    ...common,
  };
  put(step, "artifact_paths", c.artifactPaths);
  put(step, "env", c.env && { ...c.env.values });
  put(step, "timeout_in_minutes", number(c.timeoutInMinutes));
  put(step, "concurrency", c.concurrency);
  put(step, "concurrency_group", c.concurrencyGroup);
  put(step, "concurrency_method", CONCURRENCY_METHODS.nameOf(c.concurrencyMethod));
  put(step, "parallelism", c.parallelism);
  put(step, "priority", number(c.priority));
  put(step, "retry", c.retry && retryFrom(c.retry));
  put(step, "soft_fail", softFailFrom(c.softFail));
  put(step, "cancel_on_build_failing", c.cancelOnBuildFailing);
  put(
    step,
    "plugins",
    c.plugins?.plugins.map((p) => ({ [p.name]: p.configuration ? toJson(ValueSchema, p.configuration) : null })),
  );
  put(step, "matrix", c.matrix && matrixFrom(c.matrix));
  if (c.signedStepJson !== undefined) step.signed = signedFrom(c.signedStepJson);
  return step;
}

/** A signed step from its JSON: the parser kept it only with a well-formed `signature`, which is read back from it. */
function signedFrom(json: string): NonNullable<ScriptStep["signed"]> {
  const step = JSON.parse(json) as Record<string, unknown> & {
    signature: NonNullable<ScriptStep["signed"]>["signature"];
  };
  const { algorithm, signed_fields, value } = step.signature;
  return { signature: { algorithm, signed_fields: [...signed_fields], value }, step };
}

function retryFrom(r: wire.StepRetry): Retry {
  const retry: Retry = {};
  put(retry, "automatic", r.automatic?.rules.map(retryRuleFrom));
  if (r.manual) {
    const manual: NonNullable<Retry["manual"]> = { allowed: r.manual.allowed };
    put(manual, "reason", r.manual.reason);
    put(manual, "permit_on_passed", r.manual.permitOnPassed);
    retry.manual = manual;
  }
  return retry;
}

/**
 * A retry rule, keys in the order the parser writes it: `automatic: true`'s default rule has its own order (exit
 * status, signal, signal reason, limit), a written rule puts the limit second.
 */
function retryRuleFrom(r: wire.AutomaticRetryRule): AutomaticRetryRule {
  const exitStatus: AutomaticRetryRule["exit_status"] =
    r.exitStatus.case === "exitStatuses" ? r.exitStatus.value.exitStatuses.map(Number) : "*";
  if (
    exitStatus === "*" &&
    r.signal === DEFAULT_RETRY_RULE.signal &&
    r.signalReason === DEFAULT_RETRY_RULE.signal_reason &&
    r.limit === DEFAULT_RETRY_RULE.limit
  ) {
    return { ...DEFAULT_RETRY_RULE };
  }
  const rule: AutomaticRetryRule = { exit_status: exitStatus, limit: r.limit };
  put(rule, "signal", r.signal);
  put(rule, "signal_reason", r.signalReason);
  return rule;
}

function matrixFrom(m: wire.StepMatrix): StepMatrix {
  const setup: StepMatrix["setup"] = {};
  for (const [dimension, list] of Object.entries(m.setup)) setup[dimension] = [...list.values];
  const matrix: StepMatrix = { setup };
  put(
    matrix,
    "adjustments",
    m.adjustments?.adjustments.map((a) => {
      const adjustment: Adjustment = { with: { ...a.with } };
      put(adjustment, "skip", skipFrom(a.skip));
      put(adjustment, "soft_fail", softFailFrom(a.softFail));
      return adjustment;
    }),
  );
  return matrix;
}

function waiterFrom(w: wire.WaitStep, common: StepCommon): WaiterStep {
  const step: WaiterStep = { type: "waiter", ...common };
  put(step, "continue_on_failure", w.continueOnFailure);
  return step;
}

function manualFrom(b: wire.BlockStep, common: StepCommon): ManualStep {
  const step: ManualStep = { type: "manual", label: b.label, ...common };
  put(step, "is_input", b.isInput);
  put(step, "prompt", b.prompt);
  put(step, "submit", b.submit);
  put(step, "blocked_state", BLOCKED_STATES.nameOf(b.blockedState));
  put(step, "allowed_teams", b.allowedTeams && [...b.allowedTeams.values]);
  put(step, "fields", b.fields && [...b.fields.fields]);
  return step;
}

function triggerFrom(t: wire.TriggerStep, common: StepCommon): TriggerStep {
  const step: TriggerStep = { type: "trigger", label: t.label, pipeline: t.pipeline, async: t.async, ...common };
  if (t.build) {
    const build: NonNullable<TriggerStep["build"]> = {};
    put(build, "message", t.build.message);
    put(build, "commit", t.build.commit);
    put(build, "branch", t.build.branch);
    put(build, "env", t.build.env && { ...t.build.env.values });
    put(build, "meta_data", t.build.metaData && { ...t.build.metaData.values });
    step.build = build;
  }
  put(step, "concurrency", t.concurrency);
  put(step, "parallelism", t.parallelism);
  put(step, "soft_fail", softFailFrom(t.softFail));
  return step;
}

function skipFrom(s: wire.StepSkip | undefined): SkipValue | undefined {
  return s?.value.case === undefined ? undefined : s.value.value;
}

function softFailFrom(s: wire.SoftFail | undefined): SoftFailValue | undefined {
  switch (s?.value.case) {
    case "everyFailure":
      return true;
    case "exitStatuses":
      return s.value.value.statuses.map((status) =>
        status.value.case === "exitStatus" ? Number(status.value.value) : "*",
      );
    default:
      return undefined;
  }
}

function number(n: bigint | undefined): number | undefined {
  return n === undefined ? undefined : Number(n);
}

/** A command step's `concurrency_method`. */
const CONCURRENCY_METHODS = enumNames(wire.ConcurrencyMethod.UNSPECIFIED, {
  ordered: wire.ConcurrencyMethod.ORDERED,
  eager: wire.ConcurrencyMethod.EAGER,
});

/** A block step's `blocked_state`. */
const BLOCKED_STATES = enumNames(wire.BlockedState.UNSPECIFIED, {
  passed: wire.BlockedState.PASSED,
  failed: wire.BlockedState.FAILED,
  running: wire.BlockedState.RUNNING,
});
