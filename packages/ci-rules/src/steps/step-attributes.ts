/**
 * The attributes each kind of step may have (docs/compatibility.md#pipeline-yaml): every one of them is read and
 * takes effect; anything else on a step is refused naming it, so nothing a pipeline asks for is silently ignored.
 * Attributes Buildkite has that this server cannot honour yet get a reason of their own. (Top-level keys other than
 * `steps`, `env`, `agents` and `notify` stay ignored: they commonly hold YAML anchors.)
 */
import type { Problems, Val } from "./step-checks.js";
import { isMapping } from "./step-checks.js";

export type AttributeKind = "command" | "wait" | "block" | "input" | "trigger" | "group";

/** Attributes of every step but a group. */
const COMMON = ["type", "key", "id", "identifier", "depends_on", "allow_dependency_failure", "if", "branches", "skip"];
/** `notify` is read on every step, and refused on all but command steps (../notify/notify.ts). */
const NOTIFY = ["notify"];

export const STEP_ATTRIBUTES: Record<AttributeKind, readonly string[]> = {
  command: [
    ...COMMON,
    ...NOTIFY,
    "command",
    "commands",
    "label",
    "name",
    "artifact_paths",
    "artifacts",
    "env",
    "timeout_in_minutes",
    "timeout",
    "agents",
    "agent_query_rules",
    "concurrency",
    "concurrency_group",
    "concurrency_method",
    "parallelism",
    "priority",
    "retry",
    "soft_fail",
    "cancel_on_build_failing",
    "plugins",
    "matrix",
    "signature",
  ],
  wait: [...COMMON, ...NOTIFY, "wait", "waiter", "continue_on_failure"],
  block: [
    ...COMMON,
    ...NOTIFY,
    "block",
    "manual",
    "label",
    "name",
    "prompt",
    "submit",
    "blocked_state",
    "allowed_teams",
    "fields",
  ],
  input: [
    ...COMMON,
    ...NOTIFY,
    "input",
    "label",
    "name",
    "prompt",
    "submit",
    "blocked_state",
    "allowed_teams",
    "fields",
  ],
  trigger: [...COMMON, ...NOTIFY, "trigger", "label", "name", "async", "build", "parallelism", "soft_fail"],
  group: [
    "type",
    "group",
    "label",
    "name",
    "key",
    "id",
    "identifier",
    "depends_on",
    "allow_dependency_failure",
    "if",
    "skip",
    "steps",
    ...NOTIFY,
  ],
};

/** Buildkite attributes this server does not honour yet, and why. */
export const UNSUPPORTED_ATTRIBUTES: Record<string, string> = {
  cache: "is not supported by this server: it has no hosted agents' cache volumes",
  secrets: "is not supported by this server: it has no cluster secrets",
  if_changed: "is not supported by this server yet: builds do not compute the files a change touched",
  image: "is not supported by this server: it has no hosted agents to run an image on",
  checkout: "is not supported by this server yet: the agent's checkout settings are not passed on",
};

/** Refuses each attribute of `body` that a `kind` step does not have (the nested form's own key excepted). */
export function checkAttributes(body: Val, field: string, kind: AttributeKind, p: Problems): void {
  if (!isMapping(body.v)) return;
  const allowed = STEP_ATTRIBUTES[kind];
  for (const name of Object.keys(body.v)) {
    if (allowed.includes(name)) continue;
    p.add(
      `${field}.${name}`,
      UNSUPPORTED_ATTRIBUTES[name] ??
        `is not an attribute of ${kind === "input" ? "an" : "a"} ${kind} step (it has ${allowed.filter((a) => a !== "type").join(", ")})`,
    );
  }
}

/** The kinds of step of the REST visual `steps` form (docs/compatibility.md#pipeline-yaml). */
export type VisualKind = "script" | "waiter" | "manual" | "input" | "trigger";

const VISUAL_COMMON = ["type", "key", "depends_on", "allow_dependency_failure", "if", "branch_configuration", "notify"];

/** The attributes each kind of visual step reads; anything else is refused naming it. */
export const VISUAL_STEP_ATTRIBUTES: Record<VisualKind, readonly string[]> = {
  script: [
    ...VISUAL_COMMON,
    "name",
    "label",
    "command",
    "agent_query_rules",
    "artifact_paths",
    "env",
    "timeout_in_minutes",
    "concurrency",
    "concurrency_group",
    "parallelism",
    "plugins",
  ],
  waiter: [...VISUAL_COMMON, "continue_on_failure"],
  manual: [...VISUAL_COMMON, "label", "prompt"],
  input: [...VISUAL_COMMON, "label", "prompt"],
  trigger: [
    ...VISUAL_COMMON,
    "label",
    "trigger_project_slug",
    "pipeline",
    "trigger_async",
    "async",
    "build",
    "trigger_commit",
    "trigger_branch",
    "parallelism",
  ],
};

/** Refuses each attribute of a visual step that its kind does not read: the YAML's own with a pointer to it. */
export function checkVisualAttributes(val: Val, field: string, kind: VisualKind, p: Problems): void {
  if (!isMapping(val.v)) return;
  const allowed = VISUAL_STEP_ATTRIBUTES[kind];
  const yamlKind: AttributeKind = {
    script: "command",
    waiter: "wait",
    manual: "block",
    input: "input",
    trigger: "trigger",
  }[kind] as AttributeKind;
  for (const name of Object.keys(val.v)) {
    if (allowed.includes(name)) continue;
    p.add(
      `${field}.${name}`,
      STEP_ATTRIBUTES[yamlKind].includes(name)
        ? "is taken in YAML configuration only, not in the visual steps; set the pipeline's `configuration` instead"
        : (UNSUPPORTED_ATTRIBUTES[name] ??
            `is not an attribute of a visual ${kind} step (it has ${allowed.filter((a) => a !== "type").join(", ")})`),
    );
  }
}
