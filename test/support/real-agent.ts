import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { agentDirs, agentEnv, agentStartArgs } from "@conveyor/deploy";
import { stack } from "./stack-env.js";

/** A real buildkite-agent process started by a suite. */
export interface RealAgent {
  name: string;
  logFile: string;
  /** Resolves with its exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** The agent's log so far. */
  log(): string;
  /** SIGTERM (a graceful disconnect), SIGKILL after 10 s. */
  stop(): Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

const started: RealAgent[] = [];
const root = mkdtempSync(join(tmpdir(), "conveyor-agents-"));
let count = 0;

/**
 * Starts the real agent the test stack built (CONVEYOR_AGENT_BIN) against the stack's agent API, with its own
 * folders, as `npm start` starts local agents: on the TLS port (pings streamed) unless `polling` or the stack has
 * no TLS. `stopAllAgents` in an afterAll stops whatever a suite started.
 */
export function startAgent(opts: {
  token: string;
  tags?: string[];
  name?: string;
  args?: string[];
  /** Poll the plain-HTTP agent API rather than stream pings over the TLS port (the default when the stack has TLS). */
  polling?: boolean;
}): RealAgent {
  count += 1;
  const name = opts.name ?? `e2e-${process.pid}-${count}`;
  const dirs = agentDirs(root, name);
  for (const dir of [dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) mkdirSync(dir, { recursive: true });
  const config = join(root, "empty.cfg");
  writeFileSync(config, "");
  const logFile = join(dirs.root, "agent.log");
  const tls = opts.polling ? undefined : stack.agentTls;
  const child: ChildProcess = spawn(
    stack.agentBin,
    [
      ...agentStartArgs({
        endpoint: tls?.url ?? stack.agentUrl,
        name,
        dirs,
        config,
        ...(opts.tags ? { tags: opts.tags } : {}),
      }),
      ...(opts.args ?? []),
    ],
    // Only what a shell needs: the test stack's own settings (S3 keys and the like) must not reach jobs, where the
    // agent would also redact their values from logs.
    {
      env: agentEnv(
        { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR },
        opts.token,
        tls?.trustFile,
      ),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const out = createWriteStream(logFile);
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const agent: RealAgent = {
    name,
    logFile,
    exited,
    log: () => readFileSync(logFile, "utf8"),
    kill: (signal) => {
      child.kill(signal);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  started.push(agent);
  return agent;
}

/** Stops every agent this process started. */
export async function stopAllAgents(): Promise<void> {
  await Promise.all(started.splice(0).map((a) => a.stop()));
}

/** A local git repository with one commit on main, as a pipeline's repository. */
export function localRepository(files: Record<string, string> = { "README.md": "# e2e\n" }): string {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-repo-"));
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  const git = (...args: string[]) =>
    execFileSync("git", args, {
      cwd: dir,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "e2e",
        GIT_AUTHOR_EMAIL: "e2e@example.com",
        GIT_COMMITTER_NAME: "e2e",
        GIT_COMMITTER_EMAIL: "e2e@example.com",
      },
    });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "first");
  return dir;
}

/** Polls `probe` until it returns something other than undefined, or fails after `timeoutMs` saying `what`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let last: { err: unknown; at: number } | undefined;
  let failures = 0;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = { err, at: Date.now() };
      failures++;
    }
    if (Date.now() > deadline) {
      // The last error may be old: say when it came and how many probes failed, so one blip reads as one.
      const cause = last
        ? `: ${failures} probe(s) failed, the last at ${((last.at - started) / 1000).toFixed(1)} s of ${timeoutMs / 1000} s: ${String(last.err)}${last.err instanceof Error && last.err.cause ? ` (${String(last.err.cause)})` : ""}`
        : "";
      throw new Error(`timed out waiting for ${what}${cause}`);
    }
    await sleep(250);
  }
}
