/**
 * Bounds of the text users store (names, branches, messages, environment variables), shared by the services that
 * judge them. Every bound keeps what one request can store, and so what one list page, job environment or event
 * carries, far below what a process or a message can hold; README (Limits) lists them.
 */
export const TEXT_LIMITS = {
  /** Names: pipelines, teams, authors (characters). */
  name: 255,
  /** A pipeline's description (characters). */
  description: 4_096,
  /** A repository URL or path (characters). */
  repository: 2_048,
  /** A branch or commit reference (characters). */
  branch: 1_024,
  /** A branch filter pattern: space-separated terms (characters). */
  branchFilter: 4_096,
  /** A build message (bytes). */
  messageBytes: 64 * 1024,
  /** Other short settings, such as provider settings (characters). */
  setting: 4_096,
} as const;

/** Bounds of one environment map (a pipeline's, a build's): a job runs with all of them, under ARG_MAX. */
export const ENV_LIMITS = {
  maxKeys: 500,
  maxKeyLength: 255,
  maxValueBytes: 64 * 1024,
  /** Every key and value together. */
  maxTotalBytes: 256 * 1024,
} as const;

/** The largest pull request number: JSON numbers beyond it have already been rounded by the time they arrive. */
export const MAX_PULL_REQUEST_ID = Number.MAX_SAFE_INTEGER;

/** Control characters (C0, DEL and C1), none of which belong in a name, branch or repository. */
const CONTROL = /\p{Cc}/u;
/** Control characters but tab, line feed and carriage return: what multi-line text may not hold. */
const CONTROL_BUT_WHITESPACE = /(?![\t\n\r])\p{Cc}/u;

export interface TextRule {
  /** The longest value, in characters (or bytes with `bytes`). */
  max: number;
  /** Measure `max` in UTF-8 bytes rather than characters. */
  bytes?: boolean;
  /** Allow tabs and line breaks (messages, descriptions); other control characters are refused anyway. */
  multiline?: boolean;
}

/** Why a text value cannot be stored (a 422 `code`), or null when it can. */
export function textProblem(value: string, rule: TextRule): string | null {
  const size = rule.bytes ? Buffer.byteLength(value, "utf8") : value.length;
  if (size > rule.max)
    return `is too long (maximum is ${rule.max.toLocaleString("en-US")} ${rule.bytes ? "bytes" : "characters"})`;
  if ((rule.multiline ? CONTROL_BUT_WHITESPACE : CONTROL).test(value)) {
    return value.includes("\u0000") ? "must not contain NUL characters" : "must not contain control characters";
  }
  return null;
}

/** A field problem, as services report them. */
export interface FieldProblem {
  field: string;
  code: string;
}

/** Shell-style variable names, as Buildkite and the agent accept them. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Checks an environment map: names as a shell takes them (so never "", "A=B" or a NUL; with `names: "any"`, any name
 * a process environment can hold: not empty, no "=", no control character), values strings without NUL, and the
 * bounds of ENV_LIMITS. Returns the problems, each naming `field.KEY` (or `field` for the whole map).
 */
export function envProblems(
  env: Readonly<Record<string, unknown>>,
  field: string,
  opts: { names?: "shell" | "any" } = {},
): FieldProblem[] {
  const validName =
    opts.names === "any" ? (key: string) => key !== "" && !/[=\p{Cc}]/u.test(key) : (key: string) => ENV_NAME.test(key);
  const problems: FieldProblem[] = [];
  const keys = Object.keys(env);
  if (keys.length > ENV_LIMITS.maxKeys) {
    return [{ field, code: `has too many variables (maximum is ${ENV_LIMITS.maxKeys}, got ${keys.length})` }];
  }
  let total = 0;
  for (const key of keys) {
    const value = env[key];
    const shown = key.length > 64 ? `${[...key].slice(0, 64).join("")}…` : key;
    const name = `${field}.${shown.replace(/\p{Cc}/gu, "?")}`;
    if (key.length > ENV_LIMITS.maxKeyLength || !validName(key)) {
      problems.push({
        field: name,
        code:
          key.length > ENV_LIMITS.maxKeyLength
            ? `is too long a variable name (maximum is ${ENV_LIMITS.maxKeyLength} characters)`
            : "is not a valid environment variable name",
      });
      continue;
    }
    if (typeof value !== "string") {
      problems.push({ field: name, code: "must be a string" });
      continue;
    }
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes > ENV_LIMITS.maxValueBytes) {
      problems.push({ field: name, code: `is too long (maximum is ${ENV_LIMITS.maxValueBytes} bytes)` });
    } else if (value.includes("\u0000")) {
      problems.push({ field: name, code: "must not contain NUL characters" });
    }
    total += key.length + bytes;
  }
  if (problems.length === 0 && total > ENV_LIMITS.maxTotalBytes) {
    problems.push({ field, code: `is too large (maximum is ${ENV_LIMITS.maxTotalBytes} bytes of names and values)` });
  }
  return problems;
}
