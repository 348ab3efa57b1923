// Streaming pings: a stack of its own with two gateways (CONVEYOR_REPLICAS=2) serving TLS behind a balancer, a ping
// interval of 10 s, and the real buildkite-agent in its default `--ping-mode auto` over https. Jobs must start well
// inside the ping interval (only the stream explains that), pause and resume must reach the agent at once, and a
// gateway killed under the agent's stream must lose no job (docs/architecture.md#streaming-pings).
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  agentDirs,
  agentEnv,
  agentStartArgs,
  bootstrapStack,
  type Credentials,
  type Stack,
  StackStartError,
  startStack,
} from "@conveyor/deploy";
import { eventually, localRepository } from "./support/real-agent.js";

jest.setTimeout(240_000);

const repoRoot = join(__dirname, "..");
const PING_INTERVAL_S = 10;

/** This machine's environment without the shared test stack's settings, so that this stack starts its own servers. */
function ownEnv(): NodeJS.ProcessEnv {
  const keep = /^(PATH|HOME|TMPDIR|USER|LANG|GO\w*|CONVEYOR_CACHE_DIR|\w+_BIN)$/;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (keep.test(key)) env[key] = value;
  return {
    ...env,
    CONVEYOR_REPLICAS: "2",
    LOG_LEVEL: process.env.STREAM_E2E_LOG_LEVEL ?? "info",
    MAX_CONNECTION_AGE_S: "5",
    AGENT_PING_INTERVAL_S: String(PING_INTERVAL_S),
    AGENT_HEARTBEAT_INTERVAL_S: "2",
  };
}

let stack: Stack;
let credentials: Credentials;
let dataDir: string;
let agent: ChildProcess;
let agentLog: string;
const log = () => readFileSync(agentLog, "utf8");

async function rest(method: string, path: string, body?: unknown) {
  const res = await fetch(`${stack.info.apiUrl}/v2/organizations/${credentials.organization.slug}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${credentials.apiToken.secret}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
}

let pipelineSlug: string;

/** Creates a one-step build and waits for it to pass; returns how long its job waited to start once runnable. */
async function buildAndWait(): Promise<number> {
  // A create cut by a gateway's kill (its connection was to the killed replica) is tried again.
  let created: Awaited<ReturnType<typeof rest>> | undefined;
  for (let attempt = 0; !created; attempt++) {
    try {
      created = await rest("POST", `/pipelines/${pipelineSlug}/builds`, {
        commit: "HEAD",
        branch: "main",
        message: "stream",
      });
    } catch (err) {
      if (attempt >= 10) throw err;
      await sleep(500);
    }
  }
  expect(created.status).toBe(201);
  const build = await eventually(
    `build ${created.body.number} passes`,
    async () => {
      const res = await rest("GET", `/pipelines/${pipelineSlug}/builds/${created.body.number}`);
      return res.body?.state === "passed" ? res.body : undefined;
    },
    90_000,
  );
  const job = build.jobs[0];
  return Date.parse(job.started_at) - Date.parse(job.runnable_at ?? build.created_at);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "conveyor-stream-"));
  stack = await startStack({ repoRoot, dataDir, ports: "free", env: ownEnv(), startTimeoutMs: 120_000 }).catch(
    (err: unknown) => {
      if (err instanceof StackStartError && err.logTail) err.message += `\n${err.logTail}`;
      throw err;
    },
  );
  credentials = (await bootstrapStack(stack.info)).credentials;
  const repository = localRepository({ "README.md": "# stream\n" });
  const pipeline = await rest("POST", "/pipelines", {
    name: "Stream",
    repository,
    cluster_id: credentials.cluster.id,
    configuration: "steps:\n  - command: echo streamed\n",
  });
  expect(pipeline.status).toBe(201);
  pipelineSlug = pipeline.body.slug;
}, 240_000);

afterAll(async () => {
  if (agent && agent.exitCode === null && agent.signalCode === null) {
    const exited = new Promise((resolve) => agent.once("exit", resolve));
    agent.kill("SIGTERM");
    setTimeout(() => agent.kill("SIGKILL"), 10_000).unref();
    await exited;
  }
  await stack?.stop();
  if (process.env.CONVEYOR_KEEP_TEST_DATA === "1") process.stderr.write(`[agent-stream] data kept in ${dataDir}\n`);
  else if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe("streaming pings with the real agent over TLS", () => {
  it("serves the agent API on the TLS port, and the agent's stream is established", async () => {
    const { agentTlsUrl, trustFile } = stack.info;
    if (!agentTlsUrl || !trustFile) throw new Error("the stack has no TLS port (is the openssl command installed?)");
    const name = "streamer";
    const dirs = agentDirs(join(dataDir, "agents"), name);
    for (const dir of [dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) mkdirSync(dir, { recursive: true });
    const config = join(dataDir, "empty.cfg");
    writeFileSync(config, "");
    agentLog = join(dirs.root, "agent.log");
    const args = agentStartArgs({ endpoint: agentTlsUrl, name, dirs, config });
    expect(args.join(" ")).toContain("--ping-mode auto");
    agent = spawn(stack.info.agentBin, args, {
      env: agentEnv({ PATH: process.env.PATH, HOME: process.env.HOME }, credentials.agentToken.secret, trustFile),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = createWriteStream(agentLog);
    agent.stdout?.pipe(out);
    agent.stderr?.pipe(out);
    await eventually("the agent's ping stream is established", async () =>
      log().includes("Ping stream connection established") ? true : undefined,
    );
  });

  it("starts jobs well inside the ping interval, one after another", async () => {
    const waits: number[] = [];
    for (let i = 0; i < 3; i++) waits.push(await buildAndWait());
    process.stderr.write(`[agent-stream] runnable → started: ${waits.map((w) => `${w} ms`).join(", ")}\n`);
    // A poll every 10 s (plus up to 10 s of jitter) would make each wait seconds; the stream makes it the checkout's.
    for (const wait of waits) expect(wait).toBeLessThan((PING_INTERVAL_S * 1000) / 2);
  });

  it("pauses and resumes the streaming agent at once", async () => {
    const agents = await rest("GET", "/agents?name=streamer");
    const id = agents.body[0].id;
    const paused = await rest("PUT", `/agents/${id}/pause`, { note: "stream e2e", timeout_in_minutes: 5 });
    expect(paused.status).toBe(204);
    const t0 = Date.now();
    await eventually("the agent hears the pause", async () =>
      log().includes("Pause reason: Paused: stream e2e") ? true : undefined,
    );
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect((await rest("PUT", `/agents/${id}/resume`, {})).status).toBe(204);
    const t1 = Date.now();
    await eventually("the agent hears the resume", async () =>
      log().includes("Agent has resumed after being paused") ? true : undefined,
    );
    expect(Date.now() - t1).toBeLessThan(5_000);
  });

  it("loses no job when a gateway is killed under the stream", async () => {
    const set = stack.replicaSets.find((s) => s.name === "gateway");
    if (!set) throw new Error("no gateway replicas");
    for (const victim of set.processes()) {
      victim.kill("SIGKILL");
      await victim.exited;
      // Builds created at once: the agent's stream broke (or was elsewhere); it polls, and streams again.
      await buildAndWait();
      await set.allReady(60_000);
      await sleep(1_000);
    }
    await buildAndWait();
  });
});
