import { spawn } from "node:child_process";
import { join } from "node:path";
import { stack } from "./stack-env.js";

const bin = join(__dirname, "..", "..", "packages/admin-cli/bin/ci-admin.js");

/** What one ci-admin run printed: its exit code, its one JSON line on stdout (if any) and its stderr. */
export interface CiAdminRun {
  code: number | null;
  // biome-ignore lint/suspicious/noExplicitAny: ci-admin's JSON output is checked field by field by each test.
  json: any;
  stderr: string;
}

/**
 * Runs ci-admin against the running stack (its identity and agents services; the pages' address, for sign-in links,
 * is the stack's gateway), `stdin` piped in. It runs without blocking the test's process: a test blocked for seconds
 * cannot notice that the gateway closed an idle kept-alive connection, and its next fetch would be sent on the closed
 * connection and fail ("other side closed").
 */
export function runCiAdmin(args: string[], stdin = "", env: NodeJS.ProcessEnv = {}): Promise<CiAdminRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: {
        ...process.env,
        IDENTITY_URL: stack.identityUrl,
        AGENTS_URL: stack.agentsUrl,
        WEB_URL: stack.apiUrl,
        ...env,
      },
      timeout: 30_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const line = stdout.trim();
      try {
        resolve({ code, json: line ? JSON.parse(line) : undefined, stderr });
      } catch {
        reject(new Error(`ci-admin ${args.join(" ")} printed what is not JSON (exit ${code}): ${line}\n${stderr}`));
      }
    });
    child.stdin.end(stdin);
  });
}

/** Runs ci-admin and returns its JSON output, failing with its stderr unless it exits 0. */
export async function ciAdminJson(...args: string[]) {
  const run = await runCiAdmin(args);
  if (run.code !== 0) throw new Error(`ci-admin ${args.join(" ")} failed (exit ${run.code}): ${run.stderr}`);
  return run.json;
}
