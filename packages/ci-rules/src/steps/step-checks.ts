/**
 * Helpers shared by the YAML parser (parse-yaml.ts) and the visual-form validator (visual-steps.ts): the readers
 * for `agents` and `soft_fail`, and, re-exported so importers keep one entry point, the typed readers
 * (step-values.ts) and the key and `depends_on` checks (step-dependencies.ts).
 */
import {
  describeValue,
  isMapping,
  isUnset,
  item,
  member,
  type Problems,
  readBool,
  readInt,
  scalarText,
  type Val,
} from "./step-values.js";

export type { StepEntry } from "./step-dependencies.js";
export {
  checkDependencies,
  KeyRegistry,
  looksLikeUuid,
  readDependsOn,
  readKey,
} from "./step-dependencies.js";
export type { Val } from "./step-values.js";
export {
  describeValue,
  isMapping,
  isUnset,
  item,
  listWords,
  member,
  Problems,
  readBool,
  readEnvMap,
  readInt,
  readString,
  readStringArray,
  readStringMap,
  readStringOrList,
  scalarText,
} from "./step-values.js";

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
