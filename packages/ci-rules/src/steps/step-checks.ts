/**
 * Helpers shared by the YAML parser (parse-yaml.ts) and the visual-form validator (visual-steps.ts): typed readers
 * that record a problem a person can act on instead of throwing, and the checks that look at all steps at once
 * (unique keys, `depends_on` naming existing keys, no dependency cycles).
 */
import type { PipelineStep, StepError } from "./step.js";

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
  if (Array.isArray(val.v)) {
    const parts: string[] = [];
    let bad = false;
    val.v.forEach((_, i) => {
      const entry = item(val, i);
      const text = scalarText(entry);
      if (text === undefined) {
        bad = true;
        p.add(`${field}[${i}]`, `must be a string, got ${describeValue(entry.v)}`);
      } else {
        parts.push(text);
      }
    });
    return bad ? undefined : parts.join(separator);
  }
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
  const out: string[] = [];
  let bad = false;
  val.v.forEach((_, i) => {
    const entry = item(val, i);
    const text = scalarText(entry);
    if (text === undefined) {
      bad = true;
      p.add(`${field}[${i}]`, `must be a string, got ${describeValue(entry.v)}`);
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

const AGENT_RULE = /^[^=\s][^=]*=/;

/** `agents` / `agent_query_rules`: a mapping `{queue: x}` or a list of "k=v" strings → ["queue=x"]. */
export function readAgentRules(val: Val | undefined, field: string, p: Problems): string[] | undefined {
  if (isUnset(val)) return undefined;
  if (isMapping(val.v)) {
    const rules: string[] = [];
    let bad = false;
    for (const name of Object.keys(val.v)) {
      const entry = member(val, name) as Val;
      const text = scalarText(entry);
      if (text === undefined) {
        bad = true;
        p.add(`${field}.${name}`, `must be a string such as "linux" or "*", got ${describeValue(entry.v)}`);
        continue;
      }
      rules.push(`${name}=${text}`);
    }
    return bad ? undefined : rules;
  }
  if (Array.isArray(val.v)) {
    const rules: string[] = [];
    let bad = false;
    val.v.forEach((_, i) => {
      const entry = item(val, i);
      const text = scalarText(entry);
      if (text === undefined || !AGENT_RULE.test(text)) {
        bad = true;
        p.add(`${field}[${i}]`, `must be a "key=value" string such as "queue=default", got ${describeValue(entry.v)}`);
        return;
      }
      rules.push(text);
    });
    return bad ? undefined : rules;
  }
  return p.add(
    field,
    `must be a mapping such as {queue: default} or a list of "key=value" strings, got ${describeValue(val.v)}`,
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function looksLikeUuid(text: string): boolean {
  return UUID.test(text.trim());
}

/** Reads a step (or group) key: a non-empty string that does not look like a UUID. */
export function readKey(val: Val | undefined, field: string, p: Problems): string | undefined {
  const key = readString(val, field, p, { nonEmpty: true });
  if (key === undefined) return undefined;
  if (looksLikeUuid(key)) {
    return p.add(field, `must not look like a UUID (got "${key}"); use a name such as "tests" or "deploy-staging"`);
  }
  return key;
}

/** `depends_on`: a string, a list of strings or `{step, allow_failure}`; null or [] mean "no dependencies" ([]). */
export function readDependsOn(
  val: Val | undefined,
  field: string,
  p: Problems,
): Array<{ step: string; allow_failure: boolean }> | undefined {
  if (val === undefined) return undefined;
  if (val.v === null) return [];
  if (typeof val.v === "string" || typeof val.v === "number") {
    const key = readString(val, field, p, { nonEmpty: true });
    return key === undefined ? undefined : [{ step: key, allow_failure: false }];
  }
  if (!Array.isArray(val.v)) {
    return p.add(
      field,
      `must be a step key, a list of step keys or a list of {step, allow_failure}, got ${describeValue(val.v)}`,
    );
  }
  const out: Array<{ step: string; allow_failure: boolean }> = [];
  let bad = false;
  val.v.forEach((_, i) => {
    const entry = item(val, i);
    const entryField = `${field}[${i}]`;
    if (isMapping(entry.v)) {
      const stepVal = member(entry, "step");
      if (isUnset(stepVal)) {
        bad = true;
        p.add(`${entryField}.step`, "is required: the key of the step to wait for");
        return;
      }
      const step = readString(stepVal, `${entryField}.step`, p, { nonEmpty: true });
      const allow = readBool(member(entry, "allow_failure"), `${entryField}.allow_failure`, p);
      if (step === undefined || (allow === undefined && !isUnset(member(entry, "allow_failure")))) {
        bad = true;
        return;
      }
      out.push({ step, allow_failure: allow ?? false });
      return;
    }
    const step = typeof entry.v === "string" || typeof entry.v === "number" ? scalarText(entry) : undefined;
    if (step === undefined || step.trim() === "") {
      bad = true;
      p.add(entryField, `must be a step key or {step: key, allow_failure: true}, got ${describeValue(entry.v)}`);
      return;
    }
    out.push({ step, allow_failure: false });
  });
  return bad ? undefined : out;
}

/** `soft_fail`: true, or a list of `{exit_status: N or "*"}`. false means "not set". */
export function readSoftFail(val: Val | undefined, field: string, p: Problems): true | Array<number | "*"> | undefined {
  if (isUnset(val)) return undefined;
  if (!Array.isArray(val.v)) {
    const flag = readBool(val, field, p);
    if (flag === undefined) return undefined;
    return flag ? true : undefined;
  }
  const out: Array<number | "*"> = [];
  let bad = false;
  val.v.forEach((_, i) => {
    const entry = item(val, i);
    const entryField = `${field}[${i}]`;
    if (!isMapping(entry.v)) {
      bad = true;
      p.add(entryField, `must be {exit_status: N} or {exit_status: "*"}, got ${describeValue(entry.v)}`);
      return;
    }
    const status = member(entry, "exit_status");
    if (isUnset(status)) {
      bad = true;
      p.add(`${entryField}.exit_status`, 'is required: an exit status such as 1, or "*" for any');
      return;
    }
    if (status.v === "*") {
      out.push("*");
      return;
    }
    const n = readInt(status, `${entryField}.exit_status`, p);
    if (n === undefined) {
      bad = true;
      return;
    }
    out.push(n);
  });
  return bad ? undefined : out;
}

/** Where a step came from, for the checks that look at all steps together. */
export interface StepEntry {
  step: PipelineStep;
  /** For example "configuration.steps[2]" or "steps[2]". */
  field: string;
}

/** Records step and group keys as they are read, refusing duplicates. */
export class KeyRegistry {
  /** key → the field of the step or group that declared it. */
  readonly declared = new Map<string, string>();
  readonly groupKeys = new Set<string>();

  register(key: string, keyField: string, ownerField: string, p: Problems, isGroup = false): boolean {
    const previous = this.declared.get(key);
    if (previous !== undefined) {
      p.add(keyField, `"${key}" is already the key of ${previous}; keys must be unique within the pipeline`);
      return false;
    }
    this.declared.set(key, ownerField);
    if (isGroup) this.groupKeys.add(key);
    return true;
  }
}

function describeEntry(entry: StepEntry): string {
  const s = entry.step;
  if (s.key) return s.key;
  return entry.field;
}

/**
 * Checks every `depends_on`: it must name a key declared in the pipeline (a step's or a group's), not the step
 * itself nor its own group, and the dependencies must not form a cycle.
 */
export function checkDependencies(entries: StepEntry[], keys: KeyRegistry, p: Problems): void {
  const declaredList = [...keys.declared.keys()];
  const byKey = new Map<string, number[]>();
  entries.forEach((entry, index) => {
    const { key, group } = entry.step;
    if (key) byKey.set(key, [...(byKey.get(key) ?? []), index]);
    if (group?.key) byKey.set(group.key, [...(byKey.get(group.key) ?? []), index]);
  });

  let referencesOk = true;
  entries.forEach((entry) => {
    const deps = entry.step.depends_on;
    if (!deps) return;
    deps.forEach((dep, i) => {
      const depField = `${entry.field}.depends_on${deps.length > 1 ? `[${i}]` : ""}`;
      if (dep.step === entry.step.key) {
        referencesOk = false;
        p.add(depField, `names "${dep.step}", the step's own key; a step cannot depend on itself`);
      } else if (entry.step.group?.key !== undefined && dep.step === entry.step.group.key) {
        referencesOk = false;
        p.add(
          depField,
          `names "${dep.step}", the key of the group this step is in; a step cannot depend on its own group`,
        );
      } else if (!keys.declared.has(dep.step)) {
        referencesOk = false;
        const known = declaredList.length
          ? `; keys in this pipeline: ${declaredList.slice(0, 20).join(", ")}${declaredList.length > 20 ? ", ..." : ""}`
          : "; no step in this pipeline has a key";
        p.add(depField, `names "${dep.step}", which is not the key of any step or group${known}`);
      }
    });
  });
  if (!referencesOk) return;

  // Cycle detection over step indices; a group key stands for all its steps.
  const edges: number[][] = entries.map((entry) =>
    (entry.step.depends_on ?? []).flatMap((dep) => byKey.get(dep.step) ?? []),
  );
  const state = new Array<number>(entries.length).fill(0); // 0 new, 1 on stack, 2 done
  const stack: number[] = [];
  const visit = (node: number): number[] | undefined => {
    state[node] = 1;
    stack.push(node);
    for (const next of edges[node] ?? []) {
      if (state[next] === 1) return [...stack.slice(stack.indexOf(next)), next];
      if (state[next] === 0) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
    }
    stack.pop();
    state[node] = 2;
    return undefined;
  };
  for (let i = 0; i < entries.length; i++) {
    if (state[i] !== 0) continue;
    const cycle = visit(i);
    if (cycle) {
      const first = entries[cycle[0] as number] as StepEntry;
      const path = cycle.map((n) => describeEntry(entries[n] as StepEntry)).join(" → ");
      p.add(`${first.field}.depends_on`, `forms a dependency cycle (${path}); remove one of these dependencies`);
      return;
    }
  }
}
