import type { Step } from "@conveyor/proto/builds";
import { HttpError } from "../errors/http-error.js";

/** The step attributes `buildkite-agent step get` may read (docs/compatibility.md#steps-from-inside-a-job). */
export const STEP_GET_ATTRIBUTES = ["id", "key", "label", "type", "state", "outcome", "command"] as const;
/** The step attribute `buildkite-agent step update` may change here. */
export const STEP_UPDATE_ATTRIBUTES = ["label"] as const;

/** Buildkite's step types, by the job type of the step's jobs. */
const STEP_TYPES: Record<string, string> = {
  script: "command",
  waiter: "wait",
  manual: "block",
  trigger: "trigger",
};

/** A 422 naming the field, in its message too: the agent prints only the message. */
export const refuse = (field: string, code: string) => {
  const message = `Validation Failed: ${field} ${code}`;
  return new HttpError(422, message, { message, errors: [{ field, code }] });
};

/** The step as `step get` shows it: its id, key (null without one), label, type, state, outcome and command. */
export function stepObject(step: Pick<Step, "id" | "key" | "label" | "type" | "state" | "outcome" | "definitionJson">) {
  let definition: Record<string, unknown> = {};
  try {
    definition = JSON.parse(step.definitionJson || "{}") as Record<string, unknown>;
  } catch {
    // An unreadable definition shows no command.
  }
  const manual = step.type === "manual" && (definition.type === "input" || definition.is_input === true);
  return {
    id: step.id,
    key: step.key === "" ? null : step.key,
    label: step.label,
    type: manual ? "input" : (STEP_TYPES[step.type] ?? step.type),
    state: step.state,
    outcome: step.outcome,
    command: typeof definition.command === "string" ? definition.command : null,
  };
}

/**
 * What `step get` prints (the export's `output`): the attribute's value as text, or with `format: json` as JSON; the
 * whole step (no attribute) needs `json`. 422 naming `format` or `attribute` otherwise.
 */
export function stepExport(step: ReturnType<typeof stepObject>, attribute: string, format: string): string {
  if (format !== "" && format !== "json") throw refuse("format", "must be json (the only format served)");
  if (attribute === "") {
    if (format !== "json") throw refuse("format", "must be json to get the whole step");
    return JSON.stringify(step);
  }
  if (!(STEP_GET_ATTRIBUTES as readonly string[]).includes(attribute))
    throw refuse("attribute", `can't get ${attribute.slice(0, 100)}: one of ${STEP_GET_ATTRIBUTES.join(", ")}`);
  const value = step[attribute as keyof typeof step];
  if (format === "json") return JSON.stringify(value);
  return value ?? "";
}

/** The refusal of a step update of anything but the label. */
export function checkStepUpdate(attribute: string): void {
  if (!(STEP_UPDATE_ATTRIBUTES as readonly string[]).includes(attribute))
    throw refuse("attribute", `can't update ${attribute.slice(0, 100)} (only label can be updated)`);
}
