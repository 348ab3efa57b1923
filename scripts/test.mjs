// `npm test`: install what is missing, build, then lint, buf lint, type checks and Jest: the "unit" project, then
// the "stack" project (integration and end-to-end suites against an isolated stack on free ports that Jest's global
// setup starts). .test-results/jest-<project>.json are Jest's reports, jest.json both combined.
// Every step runs even if an earlier one failed; the exit code is non-zero if any failed.
// .test-results/summary.json gets {passed, failed}: Jest's test counts plus one per check step, and {notRun,
// notRunTests}: the tests that did not run because their precondition is missing (test/support/not-run.ts), with
// their reasons; they are never among the passed (scripts/test-summary.mjs).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, ensureChromium, installAndBuild, repoRoot, run, say, turboEnv } from "./prepare.mjs";
import { jestCounts, notRunLines, readNotRun, summarize } from "./test-summary.mjs";

const resultsDir = join(repoRoot, ".test-results");
const summaryFile = join(resultsDir, "summary.json");
const jestFile = join(resultsDir, "jest.json");
const notRunFile = join(resultsDir, "not-run.jsonl");
mkdirSync(resultsDir, { recursive: true });
rmSync(summaryFile, { force: true });
rmSync(jestFile, { force: true });
rmSync(notRunFile, { force: true });

/** @type {{name: string, ok: boolean, seconds: number, detail?: string}[]} */
const steps = [];

async function step(name, fn) {
  say(`── ${name}`);
  const started = Date.now();
  const code = await fn();
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  steps.push({ name, ok: code === 0, seconds });
  say(`── ${name}: ${code === 0 ? "passed" : `FAILED (exit ${code})`} in ${seconds} s`);
  return code;
}

const buildCode = await installAndBuild();
if (buildCode !== 0) steps.push({ name: "install and build", ok: false, seconds: 0 });

await step("lint (biome check .)", () => run(bin("biome"), ["check", "."]));
await step("buf lint (proto/)", () => run(bin("buf"), ["lint"], { cwd: join(repoRoot, "proto") }));
await step("typecheck (turbo run typecheck, test/)", async () => {
  const code = await run(bin("turbo"), ["run", "typecheck", "--output-logs=errors-only"], { env: turboEnv });
  const testCode = existsSync(join(repoRoot, "test", "tsconfig.json"))
    ? await run(bin("tsc"), ["-p", "test/tsconfig.json", "--noEmit"])
    : 0;
  return code !== 0 ? code : testCode;
});
await step("the summary's own tests (node --test scripts/test-summary.test.mjs)", () =>
  run(process.execPath, ["--test", join(repoRoot, "scripts", "test-summary.test.mjs")]),
);

/**
 * Runs one Jest project; resolves with its counts. Each project runs on its own, so that unit results still count
 * when the stack project's global setup cannot start a stack (which aborts a Jest run as a whole).
 */
async function jestProject(project, label) {
  say(`── jest ${project} (${label})`);
  const started = Date.now();
  const outputFile = join(resultsDir, `jest-${project}.json`);
  rmSync(outputFile, { force: true });
  const code = await run(process.execPath, [
    join(repoRoot, "node_modules", "jest", "bin", "jest.js"),
    "--ci",
    "--selectProjects",
    project,
    "--maxWorkers=2",
    "--json",
    "--outputFile",
    outputFile,
  ]);
  let report;
  try {
    report = JSON.parse(readFileSync(outputFile, "utf8"));
  } catch (err) {
    // No report: Jest itself failed (for example the stack did not start); jestCounts counts one failure.
    say(`  no Jest report in ${outputFile}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const counts = jestCounts(report);
  if (code !== 0 && counts.failed === 0) counts.failed = 1;
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  say(`── jest ${project}: ${counts.passed} passed, ${counts.failed} failed in ${seconds} s`);
  return { project, code, seconds, ...counts, report };
}

// The browser suites (test/browser) drive Debian's Chromium, installed here when missing, as the stack's Go tools are
// built on first use. When it cannot be installed they fail with the reason (test/support/browser.ts reads it).
const browserDir = join(repoRoot, "test", "browser");
if (existsSync(browserDir) && readdirSync(browserDir).some((f) => f.endsWith(".browser.test.ts"))) {
  say("── Chromium for the browser suites (test/browser)");
  await ensureChromium();
}

const secretsFile = join(resultsDir, "secrets-in-logs.json");
rmSync(secretsFile, { force: true });
const runs = [
  await jestProject("unit", "no servers"),
  await jestProject("stack", "integration and end-to-end against an isolated stack on free ports"),
];
// The stack's teardown searched every log of the run for every secret issued (test/setup/global-teardown.ts).
await step("no secret in the stack run's logs", async () => {
  if (!existsSync(secretsFile)) {
    say("  no scan result: the stack did not run to its teardown");
    return 1;
  }
  const scan = JSON.parse(readFileSync(secretsFile, "utf8"));
  say(`  ${scan.files} log files, ${scan.bytes} bytes searched: ${scan.findings.length} secrets found`);
  for (const f of scan.findings.slice(0, 20)) say(`  ${f.file}:${f.line} ${f.redacted}`);
  return scan.files > 0 && scan.findings.length === 0 ? 0 : 1;
});
// One combined report in Jest's format, for tools that read .test-results/jest.json.
const combined = { numPassedTests: 0, numFailedTests: 0, numTotalTests: 0, numFailedTestSuites: 0, testResults: [] };
for (const r of runs) {
  if (!r.report) continue;
  for (const key of ["numPassedTests", "numFailedTests", "numTotalTests", "numFailedTestSuites"]) {
    combined[key] += r.report[key];
  }
  combined.testResults.push(...r.report.testResults);
}
writeFileSync(jestFile, JSON.stringify({ ...combined, success: runs.every((r) => r.code === 0) }));
const jestCode = runs.some((r) => r.code !== 0) ? 1 : 0;

const summary = summarize(steps, runs, readNotRun(notRunFile));
writeFileSync(summaryFile, `${JSON.stringify(summary, null, 2)}\n`);

process.stdout.write("\n");
for (const s of steps) say(`${s.ok ? "ok  " : "FAIL"} ${s.name} (${s.seconds} s)`);
for (const r of runs) {
  say(`${r.code === 0 ? "ok  " : "FAIL"} jest ${r.project}: ${r.passed} passed, ${r.failed} failed (${r.seconds} s)`);
}
for (const line of notRunLines(summary)) say(line);
const ok = summary.failed === 0 && jestCode === 0 && buildCode === 0;
say(ok ? "all checks passed" : "some checks FAILED");
process.exit(ok ? 0 : 1);
