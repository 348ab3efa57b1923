// `npm test`: install what is missing, build, then lint, buf lint, type checks and Jest (unit tests, then
// integration and end-to-end suites against an isolated stack on free ports that Jest's global setup starts).
// Every step runs even if an earlier one failed; the exit code is non-zero if any failed.
// .test-results/summary.json gets {passed, failed}: Jest's test counts plus one per check step.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bin, installAndBuild, repoRoot, run, say, turboEnv } from "./prepare.mjs";

const resultsDir = join(repoRoot, ".test-results");
const summaryFile = join(resultsDir, "summary.json");
const jestFile = join(resultsDir, "jest.json");
mkdirSync(resultsDir, { recursive: true });
rmSync(summaryFile, { force: true });
rmSync(jestFile, { force: true });

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

say("── jest (unit, then integration and end-to-end against an isolated stack)");
const jestStarted = Date.now();
const jestCode = await run(process.execPath, [
  join(repoRoot, "node_modules", "jest", "bin", "jest.js"),
  "--ci",
  "--maxWorkers=2",
  "--json",
  "--outputFile",
  jestFile,
]);
let jest = { passed: 0, failed: 0 };
try {
  const report = JSON.parse(readFileSync(jestFile, "utf8"));
  jest = { passed: report.numPassedTests, failed: report.numFailedTests };
  // A suite that fails to load (a syntax error, a failing beforeAll) has no failed test; count it as one.
  const brokenSuites = report.testResults.filter(
    (r) => r.status === "failed" && r.assertionResults.every((a) => a.status !== "failed"),
  ).length;
  jest.failed += brokenSuites;
} catch {
  jest = { passed: 0, failed: 1 };
}
if (jestCode !== 0 && jest.failed === 0) jest.failed = 1;

const checkPassed = steps.filter((s) => s.ok).length;
const checkFailed = steps.filter((s) => !s.ok).length;
const summary = {
  passed: jest.passed + checkPassed,
  failed: jest.failed + checkFailed,
  steps,
  jest: { ...jest, exitCode: jestCode, seconds: Math.round((Date.now() - jestStarted) / 100) / 10 },
};
writeFileSync(summaryFile, `${JSON.stringify(summary, null, 2)}\n`);

process.stdout.write("\n");
for (const s of steps) say(`${s.ok ? "ok  " : "FAIL"} ${s.name} (${s.seconds} s)`);
say(
  `${jestCode === 0 ? "ok  " : "FAIL"} jest: ${jest.passed} passed, ${jest.failed} failed (${summary.jest.seconds} s)`,
);
const ok = summary.failed === 0 && jestCode === 0 && buildCode === 0;
say(ok ? "all checks passed" : "some checks FAILED");
process.exit(ok ? 0 : 1);
