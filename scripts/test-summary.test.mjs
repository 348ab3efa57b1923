// Tests of the summary `npm test` writes (test-summary.mjs). The scripts run on plain Node before node_modules may
// exist, so their tests use Node's own runner: `node --test scripts/test-summary.test.mjs`, a step of `npm test`.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { jestCounts, notRunLines, readNotRun, summarize } from "./test-summary.mjs";

/** A Jest JSON report with the given suites, each a status and its tests' statuses. */
function report(suites) {
  const all = suites.flatMap((s) => s.tests);
  return {
    numPassedTests: all.filter((t) => t === "passed").length,
    numFailedTests: all.filter((t) => t === "failed").length,
    numPendingTests: all.filter((t) => t === "pending").length,
    testResults: suites.map((s) => ({ status: s.status, assertionResults: s.tests.map((status) => ({ status })) })),
  };
}

const entry = (suite, test, count, reportedAs) => ({
  suite,
  test,
  count,
  precondition: "the bundled FerretDB (v1.24.2-conveyor.10) as the stack's MongoDB-wire server, and its oracle",
  reason: "the stack's MongoDB-wire server is FerretDB v1.24.2",
  reportedAs,
});

test("counts Jest's passed and failed tests, a suite that failed to load as one failure, no report as one", () => {
  const fake = report([
    { status: "passed", tests: ["passed", "passed", "pending"] },
    { status: "failed", tests: ["passed", "failed"] },
    { status: "failed", tests: [] },
  ]);
  assert.deepEqual(jestCounts(fake), { passed: 3, failed: 2 });
  assert.deepEqual(jestCounts(undefined), { passed: 0, failed: 1 });
});

test("reads the tests not run, one JSON line each, and keeps an unreadable line as a failed entry", () => {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-summary-"));
  try {
    const file = join(dir, "not-run.jsonl");
    assert.deepEqual(readNotRun(file), []);
    const one = entry("test/mongo-indexes.int.test.ts", "$name: find returns …", 27, "failed");
    writeFileSync(file, `${JSON.stringify(one)}\n\n{"truncated\n`);
    const read = readNotRun(file);
    assert.equal(read.length, 2);
    assert.deepEqual(read[0], one);
    assert.equal(read[1].reportedAs, "failed");
    assert.match(read[1].reason, /^unreadable record/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("summarizes in the shape .ci/run reads, with the tests not run counted apart from the passed", () => {
  const steps = [
    { name: "lint", ok: true, seconds: 1 },
    { name: "typecheck", ok: false, seconds: 2 },
  ];
  const runs = [
    { project: "unit", code: 0, seconds: 3, passed: 10, failed: 0, report: {} },
    { project: "stack", code: 1, seconds: 4, passed: 5, failed: 28, report: {} },
  ];
  const notRun = [
    entry("test/mongo-indexes.int.test.ts", "$name: find returns …", 27, "failed"),
    entry("test/mongo-differential.int.test.ts", "answers random operations …", 1, "failed"),
  ];
  const summary = summarize(steps, runs, notRun);
  assert.deepEqual(Object.keys(summary), ["passed", "failed", "notRun", "notRunTests", "steps", "jest"]);
  assert.equal(summary.passed, 16);
  assert.equal(summary.failed, 29);
  assert.equal(summary.notRun, 28);
  assert.deepEqual(summary.notRunTests, notRun);
  assert.deepEqual(summary.jest, [
    { project: "unit", exitCode: 0, seconds: 3, passed: 10, failed: 0 },
    { project: "stack", exitCode: 1, seconds: 4, passed: 5, failed: 28 },
  ]);
  assert.deepEqual(summarize(steps, runs, []).notRun, 0);
});

test("prints one line per suite and reason, saying how Jest counted the tests", () => {
  const summary = summarize(
    [],
    [],
    [
      entry("test/mongo-indexes.int.test.ts", "a", 20, "skipped"),
      entry("test/mongo-indexes.int.test.ts", "b", 7, "skipped"),
      entry("test/mongo-differential.int.test.ts", "c", 1, "failed"),
    ],
  );
  const lines = notRunLines(summary);
  assert.equal(lines.length, 3);
  assert.match(lines[0], /^NOT RUN 28 test\(s\)/);
  assert.match(
    lines[1],
    /^ {2}test\/mongo-indexes\.int\.test\.ts: 27 skipped, needs the bundled FerretDB .*: the stack's MongoDB-wire server is FerretDB v1\.24\.2$/,
  );
  assert.match(lines[2], /^ {2}test\/mongo-differential\.int\.test\.ts: 1 failed, needs /);
  assert.deepEqual(notRunLines(summarize([], [], [])), []);
});
