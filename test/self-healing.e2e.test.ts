// Self-healing: a one-machine stack of its own (one process of each, as `npm start` runs it) whose servers and
// processes are killed with SIGKILL in turn while a real agent runs builds. The launcher's supervisor starts each
// again on its port and data (docs/operations.md#a-process-dies), and a build made after each kill passes, with the
// builds made before it finishing too.
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  agentDirs,
  agentEnv,
  agentStartArgs,
  bootstrapStack,
  type Credentials,
  dataPaths,
  isRecordedProcessAlive,
  type ManagedProcess,
  readStackFile,
  type Stack,
  StackStartError,
  startStack,
} from "@conveyor/deploy";
import { localRepository } from "./support/real-agent.js";

const repoRoot = join(__dirname, "..");
/** Killed in this order: a backend, each server, the gateway, and the process agents talk to through it. */
const KILL_ORDER = ["builds", "mongodb", "nats", "s3", "gateway", "agents"] as const;

/** This machine's PATH, tool cache and binaries, without the shared test stack's settings. */
function ownEnv(): NodeJS.ProcessEnv {
  const keep = /^(PATH|HOME|TMPDIR|USER|LANG|GO\w*|CONVEYOR_CACHE_DIR|\w+_BIN)$/;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (keep.test(key)) env[key] = value;
  return {
    ...env,
    LOG_LEVEL: "info",
    AGENT_PING_INTERVAL_S: "1",
    AGENT_HEARTBEAT_INTERVAL_S: "2",
    JOB_ASSIGN_TIMEOUT_S: "15",
  };
}

let stack: Stack;
let credentials: Credentials;
let dataDir: string;
let agent: ChildProcess | undefined;
const lines: string[] = [];

async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${stack.info.apiUrl}/v2/organizations/${credentials.organization.slug}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${credentials.apiToken.secret}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A call tried again while the stack comes back (a refused connection, a 503 or 504 while a server restarts). */
async function retried(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      const res = await rest(method, path, body);
      if (res.status < 500 || Date.now() > deadline) return res;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(500);
  }
}

async function finished(slug: string, number: number): Promise<{ state: string }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await retried("GET", `/pipelines/${slug}/builds/${number}`);
    const build = res.body as { state: string };
    if (res.status === 200 && ["passed", "failed", "canceled"].includes(build.state)) return build;
    if (Date.now() > deadline) throw new Error(`build ${number} is still ${build.state} after 120 s`);
    await sleep(500);
  }
}

/** The supervisor's new process for `name`, once it runs. */
async function runningAgain(name: string, killed: ManagedProcess): Promise<ManagedProcess> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const now = stack.supervisor.current(name);
    if (now && now !== killed && now.running()) return now;
    if (Date.now() > deadline) throw new Error(`${name} was not started again within 90 s:\n${lines.join("\n")}`);
    await sleep(100);
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "conveyor-self-healing-"));
  stack = await startStack({
    repoRoot,
    dataDir,
    ports: "free",
    env: ownEnv(),
    startTimeoutMs: 120_000,
    log: (line) => lines.push(line),
  }).catch((err: unknown) => {
    if (err instanceof StackStartError && err.logTail) err.message += `\n${err.logTail}`;
    throw err;
  });
  credentials = (await bootstrapStack(stack.info)).credentials;
  const dirs = agentDirs(join(dataDir, "agents"), "self-healing");
  for (const dir of [dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) mkdirSync(dir, { recursive: true });
  const config = join(dataDir, "empty.cfg");
  writeFileSync(config, "");
  agent = spawn(
    stack.info.agentBin,
    agentStartArgs({ endpoint: stack.info.agentUrl, name: "self-healing", dirs, config }),
    {
      env: agentEnv({ PATH: process.env.PATH, HOME: process.env.HOME }, credentials.agentToken.secret),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const out = createWriteStream(join(dirs.root, "agent.log"));
  agent.stdout?.pipe(out);
  agent.stderr?.pipe(out);
}, 240_000);

afterAll(async () => {
  if (agent && agent.exitCode === null && agent.signalCode === null) {
    const gone = new Promise((resolve) => agent?.once("exit", resolve));
    agent.kill("SIGTERM");
    setTimeout(() => agent?.kill("SIGKILL"), 10_000).unref();
    await gone;
  }
  await stack?.stop();
  if (process.env.CONVEYOR_KEEP_TEST_DATA === "1") process.stderr.write(`[self-healing] data kept in ${dataDir}\n`);
  else if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("a one-machine stack whose processes are killed", () => {
  it("starts each killed server and process again, and builds made before and after each kill pass", async () => {
    const configuration = [
      "steps:",
      "  - label: work",
      '    command: echo hi > out.txt && buildkite-agent meta-data set k "$BUILDKITE_BUILD_NUMBER" && buildkite-agent artifact upload out.txt',
    ].join("\n");
    const created = await rest("POST", "/pipelines", {
      name: "Self healing",
      repository: localRepository(),
      cluster_id: credentials.cluster.id,
      configuration,
    });
    expect(created.status).toBe(201);
    const slug = (created.body as { slug: string }).slug;
    const numbers: number[] = [];
    const build = async () => {
      const res = await retried("POST", `/pipelines/${slug}/builds`, { commit: "HEAD", branch: "main" });
      expect(res.status).toBe(201);
      const number = (res.body as { number: number }).number;
      numbers.push(number);
      return number;
    };
    expect((await finished(slug, await build())).state).toBe("passed");

    for (const name of KILL_ORDER) {
      const proc = stack.supervisor.current(name);
      if (!proc) throw new Error(`the stack has no ${name} process of its own`);
      // A build in flight when the process dies.
      const before = await build();
      proc.kill("SIGKILL");
      const again = await runningAgain(name, proc);
      expect(again.pid).not.toBe(proc.pid);
      expect(lines.join("\n")).toMatch(new RegExp(`${name}.* was killed by SIGKILL; starting it again`));
      expect((await finished(slug, before)).state).toBe("passed");
      expect((await finished(slug, await build())).state).toBe("passed");
    }
    expect(stack.supervisor.restarts()).toMatchObject(Object.fromEntries(KILL_ORDER.map((name) => [name, 1])));
    // stack.json records the processes running now, so `status` and a later launcher see the new ones.
    const recorded = readStackFile(dataPaths(dataDir))?.processes ?? [];
    for (const p of recorded.filter((r) => ["builds", "gateway", "agents"].includes(r.name)))
      expect(isRecordedProcessAlive(p)).toBe(true);
    // Every build made passed, each once.
    const listed = await rest("GET", `/pipelines/${slug}/builds?per_page=100`);
    const states = (listed.body as Array<{ number: number; state: string }>).map((b) => [b.number, b.state]);
    expect(states.sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual(numbers.map((n) => [n, "passed"]));
  }, 900_000);
});
