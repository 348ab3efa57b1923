import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { TestStackState } from "./global-setup.js";

const KEEP_DATA_VAR = "CONVEYOR_KEEP_TEST_DATA";

/** Stops the test stack and removes its data, unless CONVEYOR_KEEP_TEST_DATA=1 asks to keep it for inspection. */
export default async function globalTeardown(): Promise<void> {
  // The same key as TEST_STACK_KEY in global-setup.ts (a value import from there would load that module again).
  const holder = globalThis as { __conveyorTestStack?: TestStackState };
  const state = holder.__conveyorTestStack;
  delete holder.__conveyorTestStack;
  if (!state) return;
  process.off("SIGINT", state.onSignal);
  process.off("SIGTERM", state.onSignal);
  await state.stack.stop();
  await scanLogsForSecrets(state.dataDir);
  await keepErrorLines(state.dataDir);
  if (process.env[KEEP_DATA_VAR] === "1") {
    process.stderr.write(`[test stack] data and logs kept in ${state.dataDir}\n`);
  } else {
    rmSync(state.dataDir, { recursive: true, force: true });
  }
}

/**
 * Every log of the run (services, servers, agents), searched for every secret the run was issued: the services'
 * tokens by their shape, the S3 keys by value. The result goes to .test-results/secrets-in-logs.json, which
 * `npm test` checks as a step of its own (a teardown cannot fail a test).
 */
async function scanLogsForSecrets(dataDir: string): Promise<void> {
  const { scanForSecrets } = await import("@conveyor/deploy");
  const known = [process.env.S3_SECRET_KEY, process.env.CONVEYOR_API_TOKEN].filter((s): s is string => !!s);
  const result = await scanForSecrets(dataDir, known, (path) => path.endsWith(".log"));
  const resultsDir = join(__dirname, "..", "..", ".test-results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, "secrets-in-logs.json"), `${JSON.stringify(result, null, 2)}\n`);
  const summary = `${result.files} log files, ${result.bytes} bytes: ${result.findings.length} secrets found`;
  process.stderr.write(`[test stack] secrets in logs: ${summary}\n`);
  for (const f of result.findings.slice(0, 20)) process.stderr.write(`  ${f.file}:${f.line} ${f.redacted}\n`);
}

/** The most error lines kept from a run's logs. */
const MAX_ERROR_LINES = 300;

/**
 * The error lines of every process's log (pino's levels 50 and 60, the Go servers' ERROR), the last
 * MAX_ERROR_LINES of them, kept in .test-results/stack-errors.log after the data folder is gone: what a 500 seen by a
 * test was, when a CI run cannot be repeated.
 */
async function keepErrorLines(dataDir: string): Promise<void> {
  const { filesUnder } = await import("@conveyor/deploy");
  const lines: string[] = [];
  try {
    for (const file of filesUnder(dataDir).filter((path) => path.endsWith(".log"))) {
      for (const line of readFileSync(file, "utf8").split("\n")) {
        if (/"level":(50|60)\b|\bERROR\b|"level":"ERROR"/.test(line))
          lines.push(`${basename(file)}: ${line.slice(0, 4000)}`);
      }
    }
  } catch (err) {
    // A log that cannot be read leaves nothing to keep: said, so that an older stack-errors.log is not taken for
    // this run's.
    process.stderr.write(`[test stack] error lines not kept: ${err instanceof Error ? err.message : String(err)}\n`);
    return;
  }
  const resultsDir = join(__dirname, "..", "..", ".test-results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, "stack-errors.log"), lines.slice(-MAX_ERROR_LINES).join("\n"));
  if (lines.length > 0)
    process.stderr.write(`[test stack] ${lines.length} error lines in its logs: .test-results/stack-errors.log\n`);
}
