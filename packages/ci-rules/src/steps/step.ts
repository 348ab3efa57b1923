import type { NotifyRule } from "../notify/notify.js";
/**
 * The pipelines domain's model of one build step, as parsed from pipeline YAML or the visual `steps` form.
 * It is what pipelines store, what the builds service turns into jobs, and what the REST `steps` array renders.
 * Optional fields are absent when the step does not set them.
 */
export type PipelineStep = ScriptStep | WaiterStep | ManualStep | TriggerStep;

/** Fields every step type may carry. */
export interface StepCommon {
  /** `key` (aliases `id`, `identifier`); never UUID-shaped. */
  key?: string;
  /** Keys of steps this one waits for. */
  depends_on?: Array<{ step: string; allow_failure: boolean }>;
  allow_dependency_failure?: boolean;
  /** Conditional expression (`if:`), kept as written; evaluated when a build is created. */
  if?: string;
  /** Branch filter pattern (`branches:`), as written. */
  branch_configuration?: string;
  /** `skip:` — true, or a reason string. */
  skip?: boolean | string;
  /**
   * The group step this step was flattened out of (YAML `group:`); absent for top-level steps.
   * A `depends_on` entry may name a group's key: it means every step whose `group.key` is that key.
   */
  group?: { label: string; key?: string };
}

/** A retry rule of `retry.automatic`. `exit_status` is "*" or a list of integers (−1 = agent lost). */
export interface AutomaticRetryRule {
  exit_status: "*" | number[];
  signal?: string;
  signal_reason?: string;
  limit: number;
}

export interface ScriptStep extends StepCommon {
  type: "script";
  /** Step-level `notify:` (docs/notifications.md#notify); absent when none. Not carried on the wire. */
  notify?: NotifyRule[];
  /** `label` or `name`; may be empty. */
  name: string;
  /** `command`/`commands`; a list is joined with "\n". */
  command: string;
  /** `artifact_paths`/`artifacts`; a list is joined with ";". */
  artifact_paths?: string;
  env?: Record<string, string>;
  timeout_in_minutes?: number;
  /** `agents` as "k=v" strings (a map is converted; `queue` included). */
  agent_query_rules: string[];
  concurrency?: number;
  concurrency_group?: string;
  concurrency_method?: "ordered" | "eager";
  parallelism?: number;
  priority?: number;
  retry?: {
    automatic?: AutomaticRetryRule[];
    manual?: { allowed: boolean; reason?: string; permit_on_passed?: boolean };
  };
  /** `soft_fail`: true, or the exit statuses that count as soft failures ("*" = any). */
  soft_fail?: true | Array<number | "*">;
  cancel_on_build_failing?: boolean;
  /** `plugins`, as a list of single-key maps `{ "name#version": config or null }` (the map form is converted). */
  plugins?: Array<Record<string, unknown>>;
  /** `matrix`; the job expansion is the builds service's business. */
  matrix?: StepMatrix;
  /**
   * A signed step (`signature`, docs/security.md#signed-pipelines): the step exactly as uploaded, its signature
   * included, which jobs give the agent to verify. Absent on unsigned steps.
   */
  signed?: { signature: StepSignature; step: Record<string, unknown> };
}

/** A step's signature, as `buildkite-agent pipeline upload --jwks-file` makes it (a JWS with a detached payload). */
export interface StepSignature {
  algorithm: string;
  signed_fields: string[];
  value: string;
}

/** A command step's `matrix`. Values are strings, as go-pipeline keeps them. */
export interface StepMatrix {
  /** Dimension name → values. A single anonymous dimension (`matrix: [a, b]` or `setup: [a, b]`) is named "". */
  setup: Record<string, string[]>;
  adjustments?: Array<{
    /** Dimension name → value; "" for the anonymous dimension. */
    with: Record<string, string>;
    skip?: boolean | string;
    soft_fail?: true | Array<number | "*">;
  }>;
}

export interface WaiterStep extends StepCommon {
  type: "waiter";
  continue_on_failure?: boolean;
}

/** A block step, or an input step (`is_input`, which has no implicit dependency). */
export interface ManualStep extends StepCommon {
  type: "manual";
  label: string;
  is_input?: boolean;
  prompt?: string;
  /** `blocked_state`: the build's state while it waits here. Default "passed". */
  blocked_state?: "passed" | "failed" | "running";
  fields?: Array<Record<string, unknown>>;
  /** `submit`: the label of the unblock button. */
  submit?: string;
  /** `allowed_teams`: team slugs or ids allowed to unblock. */
  allowed_teams?: string[];
}

export interface TriggerStep extends StepCommon {
  type: "trigger";
  label: string;
  /** Slug of the pipeline to trigger. */
  pipeline: string;
  build?: {
    message?: string;
    branch?: string;
    commit?: string;
    env?: Record<string, string>;
    meta_data?: Record<string, string>;
  };
  async: boolean;
  concurrency?: number;
  parallelism?: number;
  soft_fail?: true | Array<number | "*">;
}

/** One problem with a pipeline definition, as the REST 422 body lists it. */
export interface StepError {
  /** For example "configuration" or "steps[2].command". */
  field: string;
  /** A reason a person can act on. */
  code: string;
}

/** The result of parsing a YAML configuration or validating visual steps. */
export type StepsResult =
  | { ok: true; steps: PipelineStep[]; env: Record<string, string>; notify?: NotifyRule[] }
  | { ok: false; errors: StepError[] };
