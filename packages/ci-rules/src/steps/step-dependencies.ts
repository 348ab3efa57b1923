/**
 * Step and group keys and `depends_on`: reading them, refusing duplicate keys, and the check that looks at all
 * steps at once (`depends_on` naming existing keys, no dependency cycles).
 */
import type { PipelineStep } from "./step.js";
import {
  describeValue,
  isMapping,
  isUnset,
  item,
  member,
  type Problems,
  readBool,
  readString,
  scalarText,
  type Val,
} from "./step-values.js";

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
