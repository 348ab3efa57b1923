// The summary `npm test` writes to .test-results/summary.json and prints, from its check steps, Jest's reports and
// the tests not run for a missing precondition (.test-results/not-run.jsonl, written by test/support/not-run.ts).
// Plain Node like the other scripts; its tests (test-summary.test.mjs) run with `node --test`, a step of `npm test`.
import { existsSync, readFileSync } from "node:fs";

/**
 * Passed and failed tests of one Jest JSON report. A suite that fails to load (a syntax error, a failing beforeAll)
 * has no failed test; it counts as one. No report at all (Jest itself failed) counts as one failure.
 * @param {{numPassedTests: number, numFailedTests: number, testResults: {status: string, assertionResults: {status: string}[]}[]} | undefined} report
 * @returns {{passed: number, failed: number}}
 */
export function jestCounts(report) {
  if (!report) return { passed: 0, failed: 1 };
  const brokenSuites = report.testResults.filter(
    (r) => r.status === "failed" && r.assertionResults.every((a) => a.status !== "failed"),
  ).length;
  return { passed: report.numPassedTests, failed: report.numFailedTests + brokenSuites };
}

/**
 * @typedef {{suite: string, test: string, count: number, precondition: string, reason: string,
 *   reportedAs: "failed" | "skipped"}} NotRunEntry
 */

/**
 * The tests not run, from the lines of not-run.jsonl (none when the file is absent). A line that is not an entry
 * is kept as one with the line as its reason, so that a broken record still shows.
 * @param {string} file
 * @returns {NotRunEntry[]}
 */
export function readNotRun(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      try {
        const entry = JSON.parse(line);
        if (typeof entry.suite === "string" && typeof entry.test === "string") return entry;
      } catch (err) {
        return unreadable(line, err instanceof Error ? err.message : String(err));
      }
      return unreadable(line, "not a not-run entry");
    });
}

/** @returns {NotRunEntry} */
function unreadable(line, why) {
  return {
    suite: "?",
    test: "?",
    count: 1,
    precondition: "?",
    reason: `unreadable record (${why}): ${line}`,
    reportedAs: "failed",
  };
}

/**
 * The summary: passed and failed are Jest's counts plus one per check step (`.ci/run` prints them); notRun counts
 * the tests that did not run for a missing precondition (among the failed, or skipped where that was allowed), and
 * notRunTests lists them with their reasons.
 * @param {{name: string, ok: boolean, seconds: number}[]} steps
 * @param {{project: string, code: number, seconds: number, passed: number, failed: number}[]} runs
 * @param {NotRunEntry[]} notRun
 */
export function summarize(steps, runs, notRun) {
  const checkPassed = steps.filter((s) => s.ok).length;
  const checkFailed = steps.filter((s) => !s.ok).length;
  return {
    passed: runs.reduce((n, r) => n + r.passed, 0) + checkPassed,
    failed: runs.reduce((n, r) => n + r.failed, 0) + checkFailed,
    notRun: notRun.reduce((n, e) => n + e.count, 0),
    notRunTests: notRun.map(({ suite, test, count, precondition, reason, reportedAs }) => ({
      suite,
      test,
      count,
      precondition,
      reason,
      reportedAs,
    })),
    steps,
    jest: runs.map(({ project, code, seconds, passed, failed }) => ({
      project,
      exitCode: code,
      seconds,
      passed,
      failed,
    })),
  };
}

/**
 * The closing lines about the tests not run: one per suite and reason, with how many and how Jest counted them.
 * @param {ReturnType<typeof summarize>} summary
 * @returns {string[]}
 */
export function notRunLines(summary) {
  if (summary.notRun === 0) return [];
  const groups = new Map();
  for (const e of summary.notRunTests) {
    const key = `${e.suite}\u0000${e.reason}\u0000${e.reportedAs}`;
    const group = groups.get(key) ?? { ...e, count: 0 };
    group.count += e.count;
    groups.set(key, group);
  }
  const lines = [`NOT RUN ${summary.notRun} test(s) whose precondition is missing (never counted as passed):`];
  for (const g of groups.values()) {
    lines.push(
      `  ${g.suite}: ${g.count} ${g.reportedAs === "failed" ? "failed" : "skipped"}, needs ${g.precondition}: ${g.reason}`,
    );
  }
  return lines;
}
