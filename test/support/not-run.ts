import { appendFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";

// A test whose precondition is missing (the server it checks is not the one it was written for, a binary it needs is
// not there) must never count as passed: it is reported as not run. Each such test is recorded, with its reason, in
// .test-results/not-run.jsonl, which `npm test` (scripts/test.mjs) reads into summary.json's `notRun` and prints.
// The test itself fails, saying why, unless CONVEYOR_TEST_ALLOW_NOT_RUN=1 says that this setting is expected: then
// Jest reports it as skipped. Either way it is never among the passed.

/** What a group of tests needs of the setting they run in: `missing` says why it is not there, when it is not. */
export interface Precondition {
  /** What is needed, for example "the bundled FerretDB and its oracle". */
  name: string;
  /** Why it is missing here; undefined when the precondition holds. */
  missing?: string;
}

/** The variable that turns a missing precondition from a failure into a skip (still listed as not run). */
export const ALLOW_NOT_RUN_VAR = "CONVEYOR_TEST_ALLOW_NOT_RUN";

const repoRoot = join(__dirname, "..", "..");

/** Where the tests not run are recorded (one JSON object a line; `npm test` clears it before Jest runs). */
export const NOT_RUN_FILE = join(repoRoot, ".test-results", "not-run.jsonl");

/** One line of NOT_RUN_FILE: `count` tests named `test` (an it.each title counts its table) did not run. */
export interface NotRunEntry {
  suite: string;
  test: string;
  count: number;
  precondition: string;
  reason: string;
  /** How Jest counted them: failed, or skipped with CONVEYOR_TEST_ALLOW_NOT_RUN=1. */
  reportedAs: "failed" | "skipped";
}

function record(test: string, count: number, precondition: Precondition): NotRunEntry["reportedAs"] {
  const reportedAs = process.env[ALLOW_NOT_RUN_VAR] === "1" ? "skipped" : "failed";
  const testPath = expect.getState().testPath ?? "unknown suite";
  const entry: NotRunEntry = {
    suite: relative(repoRoot, testPath),
    test,
    count,
    precondition: precondition.name,
    reason: precondition.missing ?? "",
    reportedAs,
  };
  mkdirSync(dirname(NOT_RUN_FILE), { recursive: true });
  appendFileSync(NOT_RUN_FILE, `${JSON.stringify(entry)}\n`);
  return reportedAs;
}

/** The error a test not run fails with: what it needs, why that is missing, and how to accept it. */
function notRunError(precondition: Precondition): Error {
  const err = new Error(
    `NOT RUN: this test needs ${precondition.name}, and ${precondition.missing}. It is listed as not run in ` +
      `\`npm test\`'s summary; set ${ALLOW_NOT_RUN_VAR}=1 where this setting is expected, to report it as skipped.`,
  );
  // The reason is the whole message: a stack trace into this helper would only hide it.
  err.stack = err.message;
  return err;
}

/**
 * Jest's `it` for tests that need `precondition`: `it` itself when it holds; otherwise an `it` (and `it.each`) whose
 * tests do not run their bodies but are recorded as not run and fail with the reason (or are skipped, with
 * CONVEYOR_TEST_ALLOW_NOT_RUN=1). Hooks that prepare for such tests check `precondition.missing` themselves.
 */
export function itRequires(precondition: Precondition): jest.It {
  if (precondition.missing === undefined) return it;
  const body = () => {
    throw notRunError(precondition);
  };
  const notRun = (title: string, _fn?: unknown, timeout?: number) => {
    if (record(title, 1, precondition) === "skipped") it.skip(title, body);
    else it(title, body, timeout);
  };
  const each = (table: readonly unknown[]) => (title: string, _fn?: unknown, timeout?: number) => {
    const rows = table as unknown[][];
    if (record(title, table.length, precondition) === "skipped") it.skip.each(rows)(title, body);
    else it.each(rows)(title, body, timeout);
  };
  return Object.assign(notRun, { each }) as unknown as jest.It;
}
