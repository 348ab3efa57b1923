/**
 * The fields of block and input steps (`text:` and `select:`, DOCS block_step.md): what a person submits when
 * unblocking is checked against them and becomes build meta-data under each field's key. `format` is a regular
 * expression anchored at both ends; it runs on RE2 (re2js), so its cost is linear in the value's length whatever
 * the pattern. Pure.
 */
import { RE2JS } from "re2js";
import type { StepError } from "./step.js";

/** The longest `format` pattern a field may have. */
export const MAX_FORMAT_LENGTH = 1024;

/** One field of a block or input step, as the YAML parser keeps it. */
export type BlockField = Record<string, unknown>;

/** The submitted values of a field: one for text and single selects, one or more for multiple selects. */
export type SubmittedFields = Record<string, readonly string[]>;

/** Why a `format` pattern cannot be used, or null when it compiles on RE2. */
export function formatProblem(format: string): string | null {
  if (format.length > MAX_FORMAT_LENGTH) return `is too long (maximum is ${MAX_FORMAT_LENGTH} characters)`;
  try {
    RE2JS.compile(format);
    return null;
  } catch (err) {
    return `is not a regular expression this server supports (RE2 syntax, no look-arounds or back-references): ${
      err instanceof Error ? err.message : String(err)
    }`;
  }
}

const text = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The field's default values: a list for multiple selects, otherwise one value or none. */
function defaults(field: BlockField): string[] {
  const d = field.default;
  if (typeof d === "string") return d === "" ? [] : [d];
  if (Array.isArray(d)) return d.filter((v): v is string => typeof v === "string");
  return [];
}

/**
 * The meta-data a submission produces, or the problems with it. Every submitted key must name a field; a field
 * left out takes its default; a required field (the default) must end up with a value; a select's values must be
 * among its options (several only when `multiple`, stored one per line, as Buildkite does); a text value must
 * match the field's `format`. Nothing is returned for an optional field left empty.
 */
export function unblockValues(
  fields: readonly BlockField[],
  submitted: SubmittedFields,
): { ok: true; metaData: Record<string, string> } | { ok: false; errors: StepError[] } {
  const errors: StepError[] = [];
  const known = new Set(fields.map((f) => text(f.key)).filter((k): k is string => k !== undefined));
  for (const key of Object.keys(submitted)) {
    if (!known.has(key))
      errors.push({ field: `fields.${key}`, code: `is not a field of this step${listKnown(known)}` });
  }
  const metaData: Record<string, string> = {};
  for (const field of fields) {
    const key = text(field.key);
    if (key === undefined) continue;
    const where = `fields.${key}`;
    const given = Object.hasOwn(submitted, key) ? submitted[key] : undefined;
    const values = (given ?? defaults(field)).filter((v) => v !== "");
    if (values.length === 0) {
      if (field.required !== false) errors.push({ field: where, code: "is required" });
      continue;
    }
    if (Object.hasOwn(field, "select")) {
      const options = Array.isArray(field.options) ? field.options : [];
      const allowed = new Set(options.map((o) => text((o as Record<string, unknown>).value)));
      if (values.length > 1 && field.multiple !== true) {
        errors.push({ field: where, code: "takes one value; the field does not allow multiple" });
        continue;
      }
      const unknown = values.filter((v) => !allowed.has(v));
      if (unknown.length > 0) {
        errors.push({ field: where, code: `must be one of the field's options, got "${unknown[0]}"` });
        continue;
      }
      metaData[key] = [...new Set(values)].join("\n");
      continue;
    }
    const [value] = values;
    if (values.length > 1 || value === undefined) {
      errors.push({ field: where, code: "takes one value" });
      continue;
    }
    const format = text(field.format);
    if (format !== undefined && format !== "" && !matchesFormat(format, value)) {
      errors.push({ field: where, code: `must match the format ${format}` });
      continue;
    }
    metaData[key] = value;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, metaData };
}

/** Whether the whole value matches `format`; a pattern RE2 cannot run matches nothing. */
function matchesFormat(format: string, value: string): boolean {
  if (format.length > MAX_FORMAT_LENGTH) return false;
  try {
    return RE2JS.compile(format).matches(value);
  } catch {
    return false;
  }
}

function listKnown(known: Set<string>): string {
  return known.size === 0 ? " (it has no fields)" : ` (its fields: ${[...known].join(", ")})`;
}
