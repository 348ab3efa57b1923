/**
 * A command step's `signature` (signed pipelines, docs/security.md#signed-pipelines): `buildkite-agent pipeline upload
 * --jwks-file …` signs each command step and uploads it with `{algorithm, signed_fields, value}`. The server does not
 * verify it (the agent does, with its own keys); it checks the shape and keeps the step exactly as uploaded, which is
 * what the agent is given to verify.
 */
import type { StepSignature } from "./step.js";
import { describeValue, isMapping, isUnset, type Problems, type Val } from "./step-checks.js";

/** Bounds of a signature: a JWS of a few KiB at most, and a handful of signed field names. */
export const SIGNATURE_LIMITS = { maxValueLength: 16_384, maxFields: 64, maxFieldLength: 256, maxAlgorithmLength: 32 };

const KEYS = ["algorithm", "signed_fields", "value"];

function boundedString(v: unknown, field: string, max: number, p: Problems): string | undefined {
  if (typeof v !== "string" || v === "") return p.add(field, `must be a non-empty string, got ${describeValue(v)}`);
  if (v.length > max) return p.add(field, `is too long (maximum is ${max} characters)`);
  return v;
}

/** The `signature` of a command step, or undefined (with a problem when it is there but malformed). */
export function readSignature(val: Val | undefined, field: string, p: Problems): StepSignature | undefined {
  if (isUnset(val)) return undefined;
  const v = val.v;
  if (!isMapping(v))
    return p.add(field, `must be a mapping {algorithm, signed_fields, value}, got ${describeValue(v)}`);
  const before = p.count;
  for (const key of Object.keys(v)) {
    if (!KEYS.includes(key))
      p.add(`${field}.${key}`, "is not an attribute of a signature (it has algorithm, signed_fields, value)");
  }
  const algorithm = boundedString(v.algorithm, `${field}.algorithm`, SIGNATURE_LIMITS.maxAlgorithmLength, p);
  const value = boundedString(v.value, `${field}.value`, SIGNATURE_LIMITS.maxValueLength, p);
  const fields = v.signed_fields;
  if (!Array.isArray(fields) || fields.length === 0) {
    p.add(`${field}.signed_fields`, `must be a non-empty list of field names, got ${describeValue(fields)}`);
  } else if (fields.length > SIGNATURE_LIMITS.maxFields) {
    p.add(`${field}.signed_fields`, `has too many fields (maximum is ${SIGNATURE_LIMITS.maxFields})`);
  } else {
    for (const [i, f] of fields.entries()) {
      boundedString(f, `${field}.signed_fields[${i}]`, SIGNATURE_LIMITS.maxFieldLength, p);
    }
  }
  if (p.count > before || algorithm === undefined || value === undefined) return undefined;
  return { algorithm, signed_fields: [...(fields as string[])], value };
}

/** A signed step's JSON as the agent is given it: the step as uploaded (its `signature` included). */
export function signedStepOf(body: Val): Record<string, unknown> | undefined {
  return isMapping(body.v) ? structuredClone(body.v) : undefined;
}
