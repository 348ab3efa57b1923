/**
 * Typed readers for step fields, shared by the YAML parser and the visual-form validator: each reads one value
 * (string, boolean, integer, list, mapping, environment) and records a problem a person can act on instead of
 * throwing.
 */
import type { StepError } from "./step.js";

/**
 * A value being read, with beside it the same value as parsed with every scalar kept as its source text (YAML
 * only: `1.10` is the number 1.1 in `v` but "1.10" in `raw`). For JSON input `raw` is undefined.
 */
export interface Val {
  v: unknown;
  raw: unknown;
}

/** Collects problems; readers return undefined after adding one. */
export class Problems {
  readonly errors: StepError[] = [];

  add(field: string, code: string): undefined {
    this.errors.push({ field, code });
    return undefined;
  }

  get count(): number {
    return this.errors.length;
  }
}

export function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The value under `key`, or undefined when the key is absent (a key present with a null value is returned). */
export function member(val: Val, key: string): Val | undefined {
  if (!isMapping(val.v) || !Object.hasOwn(val.v, key)) return undefined;
  const raw = isMapping(val.raw) && Object.hasOwn(val.raw, key) ? val.raw[key] : undefined;
  return { v: val.v[key], raw };
}

export function item(val: Val, index: number): Val {
  const v = Array.isArray(val.v) ? val.v[index] : undefined;
  const raw = Array.isArray(val.raw) ? val.raw[index] : undefined;
  return { v, raw };
}

/** Absent or null: "not set". */
export function isUnset(val: Val | undefined): val is undefined {
  return val === undefined || val.v === null || val.v === undefined;
}

/** A short description of a value for messages: `"abc"`, `12`, `true`, `null`, `a list`, `a mapping`. */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a mapping";
  if (typeof v === "string") {
    const shown = v.length > 60 ? `${v.slice(0, 57)}...` : v;
    return JSON.stringify(shown);
  }
  return String(v);
}

/** `a`, `a and b`, `a, b and c`. */
export function listWords(words: string[]): string {
  if (words.length <= 1) return words.join("");
  return `${words.slice(0, -1).join(", ")} and ${words[words.length - 1]}`;
}

/**
 * The text of a scalar: a string as is; a number or boolean as written in the YAML source when known (so `1.10`
 * stays "1.10", as go-yaml decodes a scalar into a string field), else as JavaScript prints it. Undefined for
 * anything else.
 */
export function scalarText(val: Val): string | undefined {
  const { v, raw } = val;
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") {
    return typeof raw === "string" ? raw : String(v);
  }
  return undefined;
}

/** A string; numbers and booleans are accepted as their text. Null or absent → undefined with no problem. */
export function readString(
  val: Val | undefined,
  field: string,
  p: Problems,
  opts: { nonEmpty?: boolean } = {},
): string | undefined {
  if (isUnset(val)) return undefined;
  const text = scalarText(val);
  if (text === undefined) return p.add(field, `must be a string, got ${describeValue(val.v)}`);
  if (opts.nonEmpty && text.trim() === "") return p.add(field, "must not be empty");
  return text;
}

/** true or false (the strings "true" and "false" are accepted too, as Buildkite's pipeline schema allows). */
export function readBool(val: Val | undefined, field: string, p: Problems): boolean | undefined {
  if (isUnset(val)) return undefined;
  if (typeof val.v === "boolean") return val.v;
  if (val.v === "true") return true;
  if (val.v === "false") return false;
  return p.add(field, `must be true or false, got ${describeValue(val.v)}`);
}

/** An integer, optionally within bounds. Strings are refused, even "3". */
export function readInt(
  val: Val | undefined,
  field: string,
  p: Problems,
  bounds: { min?: number; max?: number } = {},
): number | undefined {
  if (isUnset(val)) return undefined;
  const { min, max } = bounds;
  let expected: string;
  if (min === 1 && max === undefined) expected = "a positive integer";
  else if (min !== undefined && max !== undefined) expected = `an integer from ${min} to ${max}`;
  else if (min !== undefined) expected = `an integer of at least ${min}`;
  else if (max !== undefined) expected = `an integer of at most ${max}`;
  else expected = "an integer";
  const v = val.v;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) {
    return p.add(field, `must be ${expected}, got ${describeValue(v)}`);
  }
  if ((min !== undefined && v < min) || (max !== undefined && v > max)) {
    return p.add(field, `must be ${expected}, got ${v}`);
  }
  return v;
}

/** A string, or a list of strings joined with `separator`. */
export function readStringOrList(
  val: Val | undefined,
  field: string,
  p: Problems,
  separator: string,
): string | undefined {
  if (isUnset(val)) return undefined;
  if (Array.isArray(val.v)) return scalarItems(val, field, p, "a string")?.join(separator);
  const text = scalarText(val);
  if (text === undefined) return p.add(field, `must be a string or a list of strings, got ${describeValue(val.v)}`);
  return text;
}

/** A list of strings; a single string is taken as a one-element list. */
export function readStringArray(val: Val | undefined, field: string, p: Problems): string[] | undefined {
  if (isUnset(val)) return undefined;
  if (!Array.isArray(val.v)) {
    const text = scalarText(val);
    if (text === undefined) return p.add(field, `must be a list of strings, got ${describeValue(val.v)}`);
    return [text];
  }
  return scalarItems(val, field, p, "a string");
}

/**
 * The scalar text of every item of a list, or undefined when one is not a scalar (each such item is reported as
 * `field[i]`, which must be `what`).
 */
export function scalarItems(val: Val, field: string, p: Problems, what: string): string[] | undefined {
  const out: string[] = [];
  let bad = false;
  (val.v as unknown[]).forEach((_, i) => {
    const entry = item(val, i);
    const text = scalarText(entry);
    if (text === undefined) {
      bad = true;
      p.add(`${field}[${i}]`, `must be ${what}, got ${describeValue(entry.v)}`);
    } else {
      out.push(text);
    }
  });
  return bad ? undefined : out;
}

/**
 * A map of strings (`env`, `meta_data`): numbers and booleans become their text, null becomes "", lists and
 * mappings are refused.
 */
export function readStringMap(val: Val | undefined, field: string, p: Problems): Record<string, string> | undefined {
  if (isUnset(val)) return undefined;
  if (!isMapping(val.v)) {
    return p.add(field, `must be a mapping of names to string values, got ${describeValue(val.v)}`);
  }
  const out: Record<string, string> = {};
  let bad = false;
  for (const name of Object.keys(val.v)) {
    // An own "__proto__" key would become the object's prototype when assigned, and be lost: refused, never dropped.
    if (name === "__proto__") {
      bad = true;
      p.add(`${field}.${name}`, "is a reserved name");
      continue;
    }
    const entry = member(val, name) as Val;
    if (entry.v === null || entry.v === undefined) {
      out[name] = "";
      continue;
    }
    const text = scalarText(entry);
    if (text === undefined) {
      bad = true;
      p.add(`${field}.${name}`, `must be a string, number or boolean, got ${describeValue(entry.v)}`);
      continue;
    }
    out[name] = text;
  }
  return bad ? undefined : out;
}

/**
 * An environment mapping: readStringMap, and names a process environment can hold (not empty, no "=", no control
 * characters: "A=B" would set another variable once the agent runs the job) and values without NUL.
 */
export function readEnvMap(val: Val | undefined, field: string, p: Problems): Record<string, string> | undefined {
  const env = readStringMap(val, field, p);
  if (env === undefined) return undefined;
  let bad = false;
  for (const [name, value] of Object.entries(env)) {
    const shown = `${field}.${name.replace(/\p{Cc}/gu, "?")}`;
    if (name === "" || name.includes("=") || /\p{Cc}/u.test(name)) {
      bad = true;
      p.add(shown, 'is not a valid environment variable name (empty, or holds "=" or a control character)');
    } else if (value.includes("\u0000")) {
      bad = true;
      p.add(shown, "must not contain NUL characters");
    }
  }
  return bad ? undefined : env;
}
