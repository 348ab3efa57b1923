/**
 * The REST `steps` array of a pipeline (docs/compatibility.md#pipelines), rendered from the pipelines service's
 * step model (packages/ci-rules/src/steps/step.ts; the types below are the part of it rendering reads).
 *
 * JSON types follow go-buildkite's Step decoding (docs/compatibility.md#go-buildkite): strings may be null, `env` is always an
 * object of strings, `timeout_in_minutes` is a number or null, `agent_query_rules` is always an array. Attributes
 * beyond the spec's table (`key`, `depends_on`, `if`, retry, plugins, …) are included where the step sets them;
 * clients ignore keys they do not know.
 */

import type { PipelineStep, StepCommon } from "./steps/step.js";

/** What rendering reads: the pipeline step model. */
export type RenderableStep = PipelineStep;

/** One element of the REST `steps` array. */
export type RestStep = Record<string, unknown> & { type: string };

function setIfDefined(out: Record<string, unknown>, name: string, value: unknown): void {
  if (value !== undefined) out[name] = value;
}

function addCommon(out: Record<string, unknown>, step: StepCommon, withBranches: boolean): void {
  setIfDefined(out, "key", step.key);
  if (step.depends_on !== undefined) {
    out.depends_on = step.depends_on.map((d) => ({ step: d.step, allow_failure: d.allow_failure === true }));
  }
  setIfDefined(out, "allow_dependency_failure", step.allow_dependency_failure);
  setIfDefined(out, "if", step.if);
  if (withBranches) setIfDefined(out, "branch_configuration", step.branch_configuration);
  setIfDefined(out, "skip", step.skip);
  if (step.group !== undefined) out.group = { ...step.group };
}

/** Renders one step for the REST `steps` array. */
export function renderRestStep(step: RenderableStep): RestStep {
  switch (step.type) {
    case "script": {
      const out: RestStep = {
        type: "script",
        name: step.name ?? null,
        command: step.command ?? null,
        artifact_paths: step.artifact_paths ?? null,
        branch_configuration: step.branch_configuration ?? null,
        env: { ...(step.env ?? {}) },
        timeout_in_minutes: step.timeout_in_minutes ?? null,
        agent_query_rules: [...(step.agent_query_rules ?? [])],
        concurrency: step.concurrency ?? null,
        parallelism: step.parallelism ?? null,
      };
      addCommon(out, step, false);
      setIfDefined(out, "concurrency_group", step.concurrency_group);
      setIfDefined(out, "concurrency_method", step.concurrency_method);
      setIfDefined(out, "priority", step.priority);
      setIfDefined(out, "retry", step.retry);
      setIfDefined(out, "soft_fail", step.soft_fail);
      setIfDefined(out, "cancel_on_build_failing", step.cancel_on_build_failing);
      setIfDefined(out, "plugins", step.plugins);
      setIfDefined(out, "matrix", step.matrix);
      return out;
    }
    case "waiter": {
      const out: RestStep = { type: "waiter" };
      addCommon(out, step, true);
      setIfDefined(out, "continue_on_failure", step.continue_on_failure);
      return out;
    }
    case "manual": {
      const out: RestStep = { type: "manual", label: step.label ?? null };
      addCommon(out, step, true);
      if (step.is_input) out.is_input = true;
      setIfDefined(out, "prompt", step.prompt);
      setIfDefined(out, "submit", step.submit);
      setIfDefined(out, "blocked_state", step.blocked_state);
      setIfDefined(out, "fields", step.fields);
      setIfDefined(out, "allowed_teams", step.allowed_teams);
      return out;
    }
    case "trigger": {
      const build: Record<string, unknown> = {
        message: step.build?.message ?? null,
        branch: step.build?.branch ?? null,
        commit: step.build?.commit ?? null,
        env: { ...(step.build?.env ?? {}) },
      };
      setIfDefined(build, "meta_data", step.build?.meta_data);
      const out: RestStep = {
        type: "trigger",
        label: step.label ?? null,
        pipeline: step.pipeline ?? null,
        build,
        async: step.async === true,
        branch_configuration: step.branch_configuration ?? null,
        concurrency: step.concurrency ?? null,
        parallelism: step.parallelism ?? null,
      };
      addCommon(out, step, false);
      setIfDefined(out, "soft_fail", step.soft_fail);
      return out;
    }
    default: {
      // A stored step of a type this code does not know: keep its type so clients see something sensible.
      const unknown = step as { type?: unknown };
      return { type: typeof unknown.type === "string" ? unknown.type : "unknown" };
    }
  }
}

const nullableString = { type: ["string", "null"] } as const;
const nullableInteger = { type: ["integer", "null"] } as const;
const stringMap = { type: "object", additionalProperties: { type: "string" } } as const;

/**
 * JSON schema of one REST step for Fastify's response serialization. Every property of every step type is listed
 * with its JSON type, and `additionalProperties: true` keeps the rest (retry, plugins, matrix, fields, …).
 */
export const restStepSchema = {
  type: "object",
  required: ["type"],
  properties: {
    type: { type: "string" },
    name: nullableString,
    label: nullableString,
    command: nullableString,
    artifact_paths: nullableString,
    branch_configuration: nullableString,
    env: stringMap,
    timeout_in_minutes: nullableInteger,
    agent_query_rules: { type: "array", items: { type: "string" } },
    concurrency: nullableInteger,
    concurrency_group: { type: "string" },
    concurrency_method: { type: "string" },
    parallelism: nullableInteger,
    priority: { type: "integer" },
    pipeline: nullableString,
    build: {
      type: "object",
      properties: {
        message: nullableString,
        branch: nullableString,
        commit: nullableString,
        env: stringMap,
        meta_data: stringMap,
      },
      additionalProperties: true,
    },
    async: { type: "boolean" },
    key: { type: "string" },
    if: { type: "string" },
    depends_on: {
      type: "array",
      items: {
        type: "object",
        properties: { step: { type: "string" }, allow_failure: { type: "boolean" } },
        additionalProperties: true,
      },
    },
    allow_dependency_failure: { type: "boolean" },
    continue_on_failure: { type: "boolean" },
    cancel_on_build_failing: { type: "boolean" },
    is_input: { type: "boolean" },
    prompt: { type: "string" },
    submit: { type: "string" },
    blocked_state: { type: "string" },
    allowed_teams: { type: "array", items: { type: "string" } },
    group: {
      type: "object",
      properties: { label: { type: "string" }, key: { type: "string" } },
      additionalProperties: true,
    },
  },
  additionalProperties: true,
} as const;
