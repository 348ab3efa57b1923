/**
 * Readers of step options for parse-yaml.ts: attributes that may be written under more than one name, `skip`,
 * `retry`, `plugins`, `matrix` and a block step's `fields`.
 */

import { formatProblem } from "./block-fields.js";
import type { AutomaticRetryRule, ScriptStep, StepMatrix } from "./step.js";
import {
  describeValue,
  isMapping,
  isUnset,
  item,
  listWords,
  member,
  type Problems,
  readBool,
  readInt,
  readSoftFail,
  readString,
  readStringArray,
  scalarText,
  type Val,
} from "./step-checks.js";
import { scalarItems } from "./step-values.js";

const FIELD_KEY = /^[A-Za-z0-9_\-/]+$/;
const MATRIX_DIMENSION = /^[A-Za-z0-9_]+$/;

/** Returns the value of the first of `names` that is set (not null); refuses two set at once. */
export function alias(body: Val, names: string[], field: string, p: Problems): { val: Val; field: string } | undefined {
  const set = names.filter((name) => !isUnset(member(body, name)));
  if (set.length > 1) {
    p.add(field, `sets both ${listWords(set.map((n) => `\`${n}\``))}; they mean the same, use only one`);
  }
  const first = set[0];
  if (first === undefined) return undefined;
  return { val: member(body, first) as Val, field: `${field}.${first}` };
}

export function readAliasedString(body: Val, names: string[], field: string, p: Problems): string | undefined {
  const found = alias(body, names, field, p);
  return found ? readString(found.val, found.field, p) : undefined;
}

export function readSkip(val: Val | undefined, field: string, p: Problems): boolean | string | undefined {
  if (isUnset(val)) return undefined;
  if (typeof val.v === "boolean") return val.v ? true : undefined;
  if (typeof val.v === "string") return val.v === "" ? undefined : val.v;
  return p.add(field, `must be true, false or a reason (a string), got ${describeValue(val.v)}`);
}

const DEFAULT_RETRY_RULE: AutomaticRetryRule = { exit_status: "*", signal: "*", signal_reason: "*", limit: 2 };

export function readRetry(val: Val | undefined, field: string, p: Problems): ScriptStep["retry"] | undefined {
  if (isUnset(val)) return undefined;
  if (!isMapping(val.v)) {
    return p.add(field, `must be a mapping with \`automatic\` and/or \`manual\`, got ${describeValue(val.v)}`);
  }
  const retry: NonNullable<ScriptStep["retry"]> = {};
  const automatic = member(val, "automatic");
  if (!isUnset(automatic)) {
    const a = automatic.v;
    const afield = `${field}.automatic`;
    if (typeof a === "boolean" || a === "true" || a === "false") {
      retry.automatic = a === true || a === "true" ? [{ ...DEFAULT_RETRY_RULE }] : [];
    } else if (isMapping(a)) {
      const rule = readRetryRule(automatic, afield, p);
      if (rule) retry.automatic = [rule];
    } else if (Array.isArray(a)) {
      const rules: AutomaticRetryRule[] = [];
      let bad = false;
      a.forEach((_, i) => {
        const rule = readRetryRule(item(automatic, i), `${afield}[${i}]`, p);
        if (rule) rules.push(rule);
        else bad = true;
      });
      if (!bad) retry.automatic = rules;
    } else {
      p.add(afield, `must be true, false, a retry rule or a list of retry rules; got ${describeValue(a)}`);
    }
  }
  const manual = member(val, "manual");
  if (!isUnset(manual)) {
    const mfield = `${field}.manual`;
    if (isMapping(manual.v)) {
      const allowed = readBool(member(manual, "allowed"), `${mfield}.allowed`, p);
      const out: NonNullable<NonNullable<ScriptStep["retry"]>["manual"]> = { allowed: allowed ?? true };
      const reason = readString(member(manual, "reason"), `${mfield}.reason`, p);
      if (reason !== undefined) out.reason = reason;
      const permit = readBool(member(manual, "permit_on_passed"), `${mfield}.permit_on_passed`, p);
      if (permit !== undefined) out.permit_on_passed = permit;
      retry.manual = out;
    } else {
      const allowed = readBool(manual, mfield, p);
      if (allowed !== undefined) retry.manual = { allowed };
    }
  }
  return Object.keys(retry).length > 0 ? retry : undefined;
}

function readRetryRule(val: Val, field: string, p: Problems): AutomaticRetryRule | undefined {
  if (!isMapping(val.v)) {
    return p.add(field, `must be a retry rule such as {exit_status: -1, limit: 2}, got ${describeValue(val.v)}`);
  }
  const before = p.count;
  let exitStatus: AutomaticRetryRule["exit_status"] = "*";
  const status = member(val, "exit_status");
  if (!isUnset(status) && status.v !== "*") {
    if (Array.isArray(status.v)) {
      const codes: number[] = [];
      status.v.forEach((_, i) => {
        const n = readInt(item(status, i), `${field}.exit_status[${i}]`, p);
        if (n !== undefined) codes.push(n);
      });
      if (codes.length === 0 && status.v.length === 0) {
        p.add(`${field}.exit_status`, 'must list at least one exit status, or be "*" for any');
      }
      exitStatus = codes;
    } else if (typeof status.v === "number") {
      const n = readInt(status, `${field}.exit_status`, p);
      if (n !== undefined) exitStatus = [n];
    } else {
      p.add(
        `${field}.exit_status`,
        `must be an exit status (an integer, -1 for a lost agent), a list of them, or "*"; got ${describeValue(status.v)}`,
      );
    }
  }
  const limit = readInt(member(val, "limit"), `${field}.limit`, p, { min: 1, max: 10 });
  const rule: AutomaticRetryRule = { exit_status: exitStatus, limit: limit ?? 2 };
  const signal = readString(member(val, "signal"), `${field}.signal`, p);
  if (signal !== undefined) rule.signal = signal;
  const reason = readString(member(val, "signal_reason"), `${field}.signal_reason`, p);
  if (reason !== undefined) rule.signal_reason = reason;
  return p.count > before ? undefined : rule;
}

export function readPlugins(
  val: Val | undefined,
  field: string,
  p: Problems,
): Array<Record<string, unknown>> | undefined {
  if (isUnset(val)) return undefined;
  const out: Array<Record<string, unknown>> = [];
  if (isMapping(val.v)) {
    for (const [name, config] of Object.entries(val.v)) out.push({ [name]: config ?? null });
    return out.length > 0 ? out : undefined;
  }
  if (!Array.isArray(val.v)) {
    return p.add(
      field,
      `must be a list of plugins (such as - docker#v5.12.0: {image: node}), got ${describeValue(val.v)}`,
    );
  }
  const before = p.count;
  val.v.forEach((entry, i) => {
    const efield = `${field}[${i}]`;
    if (typeof entry === "string") {
      if (entry.trim() === "") p.add(efield, "must name a plugin, such as docker#v5.12.0");
      else out.push({ [entry]: null });
      return;
    }
    if (!isMapping(entry)) {
      p.add(efield, `must be a plugin name or a mapping {plugin-name: settings}, got ${describeValue(entry)}`);
      return;
    }
    const names = Object.keys(entry);
    if (names.length !== 1) {
      p.add(
        efield,
        names.length === 0
          ? "is an empty mapping; write {plugin-name: settings}"
          : `must be a mapping with one key, the plugin name, but has ${listWords(names.map((n) => `"${n}"`))}; ` +
              "indent the plugin's settings under its name",
      );
      return;
    }
    const name = names[0] as string;
    out.push({ [name]: entry[name] ?? null });
  });
  if (p.count > before) return undefined;
  return out.length > 0 ? out : undefined;
}

function readMatrixValues(val: Val, field: string, p: Problems): string[] | undefined {
  if (!Array.isArray(val.v)) return p.add(field, `must be a list of values, got ${describeValue(val.v)}`);
  return scalarItems(val, field, p, "a string, integer or boolean");
}

export function readMatrix(val: Val | undefined, field: string, p: Problems): StepMatrix | undefined {
  if (isUnset(val)) return undefined;
  if (Array.isArray(val.v)) {
    const values = readMatrixValues(val, field, p);
    if (values === undefined) return undefined;
    if (values.length === 0) return p.add(field, "must list at least one value");
    return { setup: { "": values } };
  }
  if (!isMapping(val.v)) {
    return p.add(field, `must be a list of values or a mapping with \`setup\`, got ${describeValue(val.v)}`);
  }
  const before = p.count;
  const setupVal = member(val, "setup");
  if (isUnset(setupVal)) return p.add(`${field}.setup`, "is required: a list of values or a mapping of dimensions");
  const setup: Record<string, string[]> = {};
  if (Array.isArray(setupVal.v)) {
    const values = readMatrixValues(setupVal, `${field}.setup`, p);
    if (values !== undefined) setup[""] = values;
  } else if (isMapping(setupVal.v)) {
    const names = Object.keys(setupVal.v);
    if (names.length === 0) p.add(`${field}.setup`, "must name at least one dimension");
    for (const name of names) {
      if (!MATRIX_DIMENSION.test(name)) {
        p.add(`${field}.setup.${name}`, "is not a valid dimension name; use letters, digits and underscores");
        continue;
      }
      const values = readMatrixValues(member(setupVal, name) as Val, `${field}.setup.${name}`, p);
      if (values !== undefined) setup[name] = values;
    }
  } else {
    p.add(`${field}.setup`, `must be a list of values or a mapping of dimensions, got ${describeValue(setupVal.v)}`);
  }
  const matrix: StepMatrix = { setup };
  const adjustmentsVal = member(val, "adjustments");
  if (!isUnset(adjustmentsVal)) {
    if (!Array.isArray(adjustmentsVal.v)) {
      p.add(`${field}.adjustments`, `must be a list of adjustments, got ${describeValue(adjustmentsVal.v)}`);
    } else {
      const dimensions = Object.keys(setup).sort();
      const adjustments: NonNullable<StepMatrix["adjustments"]> = [];
      adjustmentsVal.v.forEach((_, i) => {
        const afield = `${field}.adjustments[${i}]`;
        const adj = item(adjustmentsVal, i);
        if (!isMapping(adj.v)) {
          p.add(afield, `must be a mapping with \`with\`, got ${describeValue(adj.v)}`);
          return;
        }
        const withVal = member(adj, "with");
        if (isUnset(withVal)) {
          p.add(`${afield}.with`, "is required: the combination of values this adjustment applies to");
          return;
        }
        const combo: Record<string, string> = {};
        if (isMapping(withVal.v)) {
          for (const name of Object.keys(withVal.v)) {
            const text = scalarText(member(withVal, name) as Val);
            if (text === undefined) {
              p.add(
                `${afield}.with.${name}`,
                `must be a string, integer or boolean, got ${describeValue(withVal.v[name])}`,
              );
            } else combo[name] = text;
          }
        } else {
          const text = scalarText(withVal);
          if (text === undefined) {
            p.add(
              `${afield}.with`,
              `must be a value or a mapping of dimension values, got ${describeValue(withVal.v)}`,
            );
            return;
          }
          combo[""] = text;
        }
        const named = Object.keys(combo).sort();
        if (named.join("\u0000") !== dimensions.join("\u0000")) {
          const expected = Object.keys(setup).filter((d) => d !== "");
          p.add(
            `${afield}.with`,
            expected.length > 0
              ? `must give a value for each dimension of the setup (${listWords(expected)}) and no others`
              : "must be a single value, as the matrix setup is a plain list",
          );
          return;
        }
        const adjustment: NonNullable<StepMatrix["adjustments"]>[number] = { with: combo };
        const skip = readSkip(member(adj, "skip"), `${afield}.skip`, p);
        if (skip !== undefined) adjustment.skip = skip;
        const softFail = readSoftFail(member(adj, "soft_fail"), `${afield}.soft_fail`, p);
        if (softFail !== undefined) adjustment.soft_fail = softFail;
        adjustments.push(adjustment);
      });
      if (adjustments.length > 0) matrix.adjustments = adjustments;
    }
  }
  return p.count > before ? undefined : matrix;
}

export function readFields(
  val: Val | undefined,
  field: string,
  p: Problems,
): Array<Record<string, unknown>> | undefined {
  if (isUnset(val)) return undefined;
  if (!Array.isArray(val.v))
    return p.add(field, `must be a list of text or select fields, got ${describeValue(val.v)}`);
  const before = p.count;
  const out: Array<Record<string, unknown>> = [];
  const seen = new Set<string>();
  val.v.forEach((_, i) => {
    const ffield = `${field}[${i}]`;
    const entry = item(val, i);
    if (!isMapping(entry.v)) {
      p.add(
        ffield,
        `must be a mapping such as {text: "Release name", key: "release-name"}, got ${describeValue(entry.v)}`,
      );
      return;
    }
    const result: Record<string, unknown> = { ...entry.v };
    const keyVal = member(entry, "key");
    if (isUnset(keyVal)) {
      p.add(`${ffield}.key`, "is required: the meta-data key that stores the field's value");
    } else {
      const key = readString(keyVal, `${ffield}.key`, p, { nonEmpty: true });
      if (key !== undefined) {
        if (!FIELD_KEY.test(key)) {
          p.add(`${ffield}.key`, `may only contain letters, digits, "-", "_" and "/", got ${describeValue(key)}`);
        } else if (seen.has(key)) {
          p.add(`${ffield}.key`, `"${key}" is already the key of another field of this step`);
        } else {
          seen.add(key);
          result.key = key;
        }
      }
    }
    const hasText = Object.hasOwn(entry.v, "text");
    const hasSelect = Object.hasOwn(entry.v, "select");
    if (hasText === hasSelect) {
      p.add(
        ffield,
        hasText ? "has both `text` and `select`; a field is one or the other" : "needs `text:` or `select:`",
      );
      return;
    }
    const kindKey = hasText ? "text" : "select";
    const title = readString(member(entry, kindKey), `${ffield}.${kindKey}`, p);
    if (title !== undefined) result[kindKey] = title;
    for (const flag of ["required", "multiple"]) {
      const b = readBool(member(entry, flag), `${ffield}.${flag}`, p);
      if (b !== undefined) result[flag] = b;
    }
    for (const textKey of ["hint", "format"]) {
      const t = readString(member(entry, textKey), `${ffield}.${textKey}`, p);
      if (t !== undefined) result[textKey] = t;
    }
    const problem = typeof result.format === "string" ? formatProblem(result.format) : null;
    if (problem) p.add(`${ffield}.format`, problem);
    const def = member(entry, "default");
    if (!isUnset(def)) {
      const d = Array.isArray(def.v)
        ? readStringArray(def, `${ffield}.default`, p)
        : readString(def, `${ffield}.default`, p);
      if (d !== undefined) result.default = d;
    }
    if (hasSelect) {
      const options = member(entry, "options");
      if (isUnset(options) || !Array.isArray(options.v) || options.v.length === 0) {
        p.add(`${ffield}.options`, "is required: a non-empty list of {label, value} for the select field");
        return;
      }
      const opts: Array<Record<string, unknown>> = [];
      options.v.forEach((_, j) => {
        const ofield = `${ffield}.options[${j}]`;
        const opt = item(options, j);
        if (!isMapping(opt.v)) {
          p.add(ofield, `must be a mapping {label, value}, got ${describeValue(opt.v)}`);
          return;
        }
        const o: Record<string, unknown> = { ...opt.v };
        for (const k of ["label", "value"]) {
          const t = readString(member(opt, k), `${ofield}.${k}`, p);
          if (t === undefined) {
            if (isUnset(member(opt, k))) p.add(`${ofield}.${k}`, "is required");
          } else o[k] = t;
        }
        opts.push(o);
      });
      result.options = opts;
    }
    out.push(result);
  });
  return p.count > before ? undefined : out;
}
