import { type ChildProcess, spawn } from "node:child_process";
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  agentDirs,
  agentEnv,
  agentStartArgs,
  cachedToolPath,
  ensureTool,
  httpStatus,
  type ManagedProcess,
  MINIO,
  spawnManaged,
  waitUntil,
} from "@conveyor/deploy";
import { stack } from "./stack-env.js";

// Processes beside the test stack for the artifact suites: a MinIO server, an artifacts service on it (its own
// database), gateways pointing at either artifacts service (one with ARTIFACTS_PROXY=1), and real agents against
// any gateway. The rest of the stack (identity, pipelines, builds, agents, MongoDB, NATS) is shared.

const root = mkdtempSync(join(tmpdir(), "conveyor-artifacts-side-"));
const started: ManagedProcess[] = [];
const agents: Array<{ stop(): Promise<void> }> = [];

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function spawnSide(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): ManagedProcess {
  const proc = spawnManaged({
    name,
    command,
    args,
    env,
    cwd: process.cwd(),
    logFile: join(root, `${name}.log`),
    detached: false,
  });
  started.push(proc);
  return proc;
}

const s3Keys = () => ({
  accessKey: process.env.S3_ACCESS_KEY ?? "conveyor",
  secretKey: process.env.S3_SECRET_KEY ?? "conveyor-secret",
});

/**
 * MinIO from the tool cache, built on first use. Suites run in parallel workers: one builds (a directory is the
 * lock) while the others wait for its binary, so a fresh machine builds it once, not once per suite.
 */
async function buildMinioOnce(cache: string): Promise<string> {
  const target = cachedToolPath(cache, MINIO);
  const lock = `${target}.lock`;
  for (;;) {
    if (existsSync(target)) return target;
    mkdirSync(dirname(lock), { recursive: true });
    try {
      mkdirSync(lock);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      // Another worker builds it (or a crashed one left its lock for good after an hour).
      if (Date.now() - statSync(lock).mtimeMs > 3_600_000) rmSync(lock, { recursive: true, force: true });
      await sleep(2000);
      continue;
    }
    try {
      const log = (line: string) => process.stderr.write(`[minio] ${line}\n`);
      return await ensureTool(MINIO, { cache, logsDir: root, env: process.env, log });
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** Starts MinIO (built into the tool cache on first use, ~10 min) on a free port; returns its endpoint. */
export async function startMinio(): Promise<string> {
  const cache = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
  const bin = process.env.MINIO_BIN ?? (await buildMinioOnce(cache));
  const [port, consolePort] = [await freePort(), await freePort()];
  const data = join(root, "minio-data");
  mkdirSync(data, { recursive: true });
  const { accessKey, secretKey } = s3Keys();
  const proc = spawnSide(
    "minio",
    bin,
    ["server", data, "--address", `127.0.0.1:${port}`, "--console-address", `127.0.0.1:${consolePort}`],
    {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MINIO_ROOT_USER: accessKey,
      MINIO_ROOT_PASSWORD: secretKey,
      MINIO_BROWSER: "off",
      MINIO_UPDATE: "off",
    },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntil(async () => (await httpStatus(`${endpoint}/minio/health/live`)) === 200, {
    what: "MinIO",
    proc,
    timeoutMs: 60_000,
  });
  return endpoint;
}

/** Starts an artifacts service on `s3Endpoint`, with its own database; returns its URL. */
export async function startArtifactsService(s3Endpoint: string, extraEnv: Record<string, string> = {}) {
  const [port, healthPort] = [await freePort(), await freePort()];
  const { accessKey, secretKey } = s3Keys();
  const proc = spawnSide("artifacts-side", process.execPath, ["services/artifacts/dist/main.js"], {
    PATH: process.env.PATH,
    HOST: "127.0.0.1",
    PORT: String(port),
    HEALTH_PORT: String(healthPort),
    MONGODB_URL: process.env.MONGODB_URL,
    MONGODB_DATABASE: `conveyor_artifacts_side_${port}`,
    NATS_URL: process.env.NATS_URL,
    S3_ENDPOINT: s3Endpoint,
    S3_ACCESS_KEY: accessKey,
    S3_SECRET_KEY: secretKey,
    S3_BUCKET: process.env.S3_BUCKET ?? "conveyor-artifacts",
    S3_REGION: process.env.S3_REGION ?? "us-east-1",
    LOG_LEVEL: "warn",
    ...extraEnv,
  });
  await waitUntil(async () => (await httpStatus(`http://127.0.0.1:${healthPort}/readyz`)) === 200, {
    what: "artifacts (side)",
    proc,
    timeoutMs: 60_000,
  });
  return `http://127.0.0.1:${port}`;
}

/** A gateway beside the stack's, on the stack's services except artifacts; returns its URLs and its process id. */
export async function startGateway(opts: { artifactsUrl: string; s3Endpoint: string; env?: Record<string, string> }) {
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const proc = spawnSide(`gateway-side-${port}`, process.execPath, ["services/gateway/dist/main.js"], {
    PATH: process.env.PATH,
    HOST: "127.0.0.1",
    PORT: String(port),
    PUBLIC_URL: apiUrl,
    NATS_URL: process.env.NATS_URL,
    IDENTITY_URL: process.env.IDENTITY_URL,
    PIPELINES_URL: process.env.PIPELINES_URL,
    BUILDS_URL: process.env.BUILDS_URL,
    AGENTS_URL: process.env.AGENTS_URL,
    ARTIFACTS_URL: opts.artifactsUrl,
    S3_ENDPOINT: opts.s3Endpoint,
    S3_BUCKET: process.env.S3_BUCKET ?? "conveyor-artifacts",
    LOG_LEVEL: "warn",
    ...opts.env,
  });
  await waitUntil(async () => (await httpStatus(`${apiUrl}/healthz`)) === 200, {
    what: "gateway (side)",
    proc,
    timeoutMs: 60_000,
  });
  return { apiUrl, agentUrl: `${apiUrl}/v3`, pid: proc.pid, describe: () => describeProcess(proc) };
}

/** Whether a side process still runs (else how it ended) and the last lines of its log: for a failing test's message. */
function describeProcess(proc: ManagedProcess): string {
  const state = proc.running() ? "running" : "exited";
  return `${proc.name} (${state}), last lines of ${proc.logFile}:\n${proc.logTail(40)}`;
}

/** Starts the real agent against an agent API (any gateway's /v3). */
export function startAgentAt(endpoint: string, token: string) {
  const name = `artifacts-${process.pid}-${agents.length + 1}`;
  const dirs = agentDirs(root, name);
  for (const dir of [dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) mkdirSync(dir, { recursive: true });
  const config = join(root, "empty.cfg");
  writeFileSync(config, "");
  const logFile = join(dirs.root, "agent.log");
  const child: ChildProcess = spawn(
    stack.agentBin,
    agentStartArgs({ endpoint, name, dirs, config, tags: ["queue=default"] }),
    {
      env: agentEnv({ PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR }, token),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const out = createWriteStream(logFile);
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const agent = {
    name,
    log: () => readFileSync(logFile, "utf8"),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  agents.push(agent);
  return agent;
}

/** Stops every agent and process this file started. */
export async function stopSide(): Promise<void> {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await Promise.all(started.splice(0).map((p) => p.stop(5000)));
}

/** The resident set size of a process in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  // No VmRSS line: the process has exited (a zombie has none); 0 would pass any bound on its growth.
  if (!match) throw new Error(`process ${pid} reports no resident set size: it has exited`);
  return Number(match[1]) * 1024;
}
