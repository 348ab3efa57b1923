// Scale-out: a stack of its own with two replicas of every backend service and of the gateway (CONVEYOR_REPLICAS=2),
// balancers in front of them as Kubernetes Services would be, and real agents running builds while one replica of
// each service in turn is killed with SIGKILL. Every build must pass with every job run exactly once, and an
// organization webhook must announce each build's end under one delivery id (docs/notifications.md#delivery).
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
  dataPaths,
  readStackFile,
  type Stack,
  StackStartError,
  startStack,
} from "@conveyor/deploy";
import { localRepository } from "./support/real-agent.js";
import { eventually, startReceiver } from "./support/webhook-receiver.js";

const repoRoot = join(__dirname, "..");
/** The order in which one replica of each is killed. */
const KILL_ORDER = ["builds", "agents", "gateway", "identity", "pipelines", "artifacts", "notifications"] as const;
const AGENTS = 3;
/** Builds created while the replicas are killed (five jobs each). */
const MAX_BUILDS = 20;

/**
 * The launcher's environment: this machine's (PATH, the tool cache and binaries it may name), without the settings
 * the Jest global setup exported for the shared stack, so that this stack starts servers of its own.
 */
function ownEnv(): NodeJS.ProcessEnv {
  const keep = /^(PATH|HOME|TMPDIR|USER|LANG|GO\w*|CONVEYOR_CACHE_DIR|\w+_BIN)$/;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (keep.test(key)) env[key] = value;
  return {
    ...env,
    CONVEYOR_REPLICAS: "2",
    LOG_LEVEL: "info",
    // Connections are retired after 5 s, so that clients (the gateways above all) spread over the replicas again
    // after a restart within the test, not only after the default two minutes.
    MAX_CONNECTION_AGE_S: "5",
    AGENT_PING_INTERVAL_S: "1",
    AGENT_HEARTBEAT_INTERVAL_S: "2",
    // A job whose assignment died with an agents replica (assigned, never offered) goes back to the queue after 15 s.
    JOB_ASSIGN_TIMEOUT_S: "15",
    // The webhook receiver listens on loopback; a delivery whose replica was killed mid-send goes again after 10 s.
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
    NOTIFY_LEASE_S: "10",
  };
}

let stack: Stack;
let credentials: Credentials;
let dataDir: string;
const agents: ChildProcess[] = [];
const agentLogs: string[] = [];
/** The organization webhook's receiver (the second test). */
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;

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
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A REST read retried across a killed replica's restart (a call cut by the kill fails once, like on any server). */
async function read(path: string): Promise<{ status: number; body: unknown }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await rest("GET", path);
      if (res.status < 500 || attempt >= 10) return res;
    } catch (err) {
      if (attempt >= 10) throw err;
    }
    await sleep(500);
  }
}

function startAgent(n: number): void {
  const name = `scale-out-${n}`;
  const dirs = agentDirs(join(dataDir, "agents"), name);
  for (const dir of [dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) mkdirSync(dir, { recursive: true });
  const config = join(dataDir, "empty.cfg");
  writeFileSync(config, "");
  const logFile = join(dirs.root, "agent.log");
  const child = spawn(stack.info.agentBin, agentStartArgs({ endpoint: stack.info.agentUrl, name, dirs, config }), {
    env: agentEnv({ PATH: process.env.PATH, HOME: process.env.HOME }, credentials.agentToken.secret),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = createWriteStream(logFile);
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  agents.push(child);
  agentLogs.push(logFile);
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "conveyor-scale-out-"));
  stack = await startStack({ repoRoot, dataDir, ports: "free", env: ownEnv(), startTimeoutMs: 120_000 }).catch(
    (err: unknown) => {
      // The data directory (and the process's log in it) goes when the suite ends: the failure carries its tail.
      if (err instanceof StackStartError && err.logTail) err.message += `\n${err.logTail}`;
      throw err;
    },
  );
  credentials = (await bootstrapStack(stack.info)).credentials;
  for (let n = 1; n <= AGENTS; n++) startAgent(n);
}, 240_000);

afterAll(async () => {
  await receiver?.close();
  await Promise.all(
    agents.map(
      (a) =>
        new Promise<void>((resolve) => {
          if (a.exitCode !== null || a.signalCode !== null) return resolve();
          a.once("exit", () => resolve());
          a.kill("SIGTERM");
          setTimeout(() => a.kill("SIGKILL"), 10_000).unref();
        }),
    ),
  );
  await stack?.stop();
  if (process.env.CONVEYOR_KEEP_TEST_DATA === "1") process.stderr.write(`[scale-out] data kept in ${dataDir}\n`);
  else if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("two replicas of every service (CONVEYOR_REPLICAS=2)", () => {
  it("runs two of each process behind a balancer on the usual ports, and records them in stack.json", async () => {
    expect(stack.info.replicas).toBe(2);
    expect(stack.replicaSets.map((s) => s.name).sort()).toEqual(
      ["agents", "artifacts", "builds", "gateway", "identity", "notifications", "pipelines"].sort(),
    );
    for (const set of stack.replicaSets) {
      expect(set.processes().map((p) => p.name)).toEqual([`${set.name}-1`, `${set.name}-2`]);
      for (const p of set.processes()) expect(p.running()).toBe(true);
    }
    const names = readStackFile(dataPaths(dataDir))?.processes.map((p) => p.name) ?? [];
    expect(names).toEqual(expect.arrayContaining(["builds-1", "builds-2", "gateway-1", "gateway-2"]));
    // The usual health port of a backend answers for its replicas.
    const ready = await fetch(`http://127.0.0.1:${stack.info.ports.health.builds}/readyz`);
    expect(ready.status).toBe(200);
  });

  it("keeps every build whole while one replica of each service in turn is killed with SIGKILL", async () => {
    const marks = join(dataDir, "runs.txt");
    writeFileSync(marks, "");
    const repository = localRepository();
    // Each job notes its id in a file outside the checkout: a job run twice shows up twice. The steps touch every
    // service: the agent API (agents, builds), meta-data (builds), an artifact (artifacts and S3), a wait step.
    const configuration = [
      "env:",
      `  MARKS: ${marks}`,
      "steps:",
      "  - label: first",
      '    command: echo "$BUILDKITE_JOB_ID" >> "$MARKS" && sleep 1',
      "    parallelism: 2",
      "  - label: meta",
      '    command: echo "$BUILDKITE_JOB_ID" >> "$MARKS" && buildkite-agent meta-data set k "$BUILDKITE_BUILD_NUMBER"',
      "  - wait",
      "  - label: artifact",
      '    command: echo "$BUILDKITE_JOB_ID" >> "$MARKS" && echo hi > out.txt && buildkite-agent artifact upload out.txt',
      "  - label: last",
      '    command: echo "$BUILDKITE_JOB_ID" >> "$MARKS" && test "$(buildkite-agent meta-data get k)" = "$BUILDKITE_BUILD_NUMBER"',
    ].join("\n");
    // An organization webhook hears every build's end, through the notifications replicas' kills.
    const hooks = await startReceiver();
    receiver = hooks;
    const hook = await rest("POST", "/webhooks", {
      webhook_url: hooks.url("/finished"),
      events: ["build.finished"],
    });
    expect(hook.status).toBe(201);
    hooks.tokens.set("/finished", (hook.body as { token: string }).token);
    const created = await rest("POST", "/pipelines", {
      name: `Scale out ${Date.now()}`,
      repository,
      cluster_id: credentials.cluster.id,
      configuration,
    });
    expect(created.status).toBe(201);
    const slug = (created.body as { slug: string }).slug;

    // Builds are created one after another all through the kills; a create cut by a kill is tried again (it may
    // have been made: the builds are counted from the pipeline's list at the end, not from the answers).
    let creating = true;
    let answered = 0;
    let failedCreates = 0;
    const creator = (async () => {
      // At most MAX_BUILDS, so that three agents (one job at a time each) finish them within the deadline on a
      // loaded machine: the test is about work surviving the kills, not about throughput.
      while (creating && answered + failedCreates < MAX_BUILDS) {
        try {
          const res = await rest("POST", `/pipelines/${slug}/builds`, { commit: "HEAD", branch: "main" });
          if (res.status === 201) answered++;
          else failedCreates++;
        } catch {
          failedCreates++;
        }
        await sleep(2_000);
      }
    })();

    const killed: string[] = [];
    try {
      await sleep(4_000);
      for (const [i, name] of KILL_ORDER.entries()) {
        const set = stack.replicaSets.find((s) => s.name === name);
        if (!set) throw new Error(`no replicas of ${name}`);
        const victim = set.processes()[i % 2];
        if (!victim) throw new Error(`no replica ${i % 2} of ${name}`);
        victim.kill("SIGKILL");
        killed.push(victim.name);
        await victim.exited;
        await set.allReady(60_000);
        await sleep(3_000);
      }
    } finally {
      creating = false;
      await creator;
    }
    expect(killed).toHaveLength(KILL_ORDER.length);
    expect(stack.replicaSets.reduce((n, s) => n + s.restarts(), 0)).toBe(KILL_ORDER.length);

    // Every build finishes (none is left hanging) and passes (no job was lost).
    type RestJob = { id: string; type: string; state: string; retries_count?: number };
    type RestBuild = { number: number; state: string; jobs: RestJob[] };
    const finished = new Set(["passed", "failed", "canceled", "skipped", "not_run"]);
    const deadline = Date.now() + 240_000;
    let builds: RestBuild[] = [];
    for (;;) {
      const res = await read(`/pipelines/${slug}/builds?per_page=100`);
      builds = res.body as RestBuild[];
      if (builds.every((b) => finished.has(b.state)) || Date.now() > deadline) break;
      await sleep(1_000);
    }
    expect(builds.length).toBeGreaterThanOrEqual(answered);
    expect(answered).toBeGreaterThanOrEqual(10);
    const states = builds.map((b) => `#${b.number} ${b.state}`);
    expect(states).toEqual(builds.map((b) => `#${b.number} passed`));

    // Every command job ran exactly once: no job was run twice, and none was retried.
    const scriptJobs = builds.flatMap((b) => b.jobs.filter((j) => j.type === "script"));
    expect(scriptJobs).toHaveLength(builds.length * 5);
    const runs = readFileSync(marks, "utf8").split("\n").filter(Boolean);
    const times = new Map<string, number>();
    for (const id of runs) times.set(id, (times.get(id) ?? 0) + 1);
    const twice = [...times].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice).toEqual([]);
    expect(new Set(runs)).toEqual(new Set(scriptJobs.map((j) => j.id)));
    for (const job of scriptJobs) expect(job.retries_count ?? 0).toBe(0);

    // Each build's end was announced under one delivery id (sent again with it at most, never under another).
    const numberOf = (r: { body: Record<string, unknown> }) => (r.body.build as { number: number }).number;
    const finishedOf = () => hooks.at("/finished").filter((r) => r.event === "build.finished");
    await eventually(
      "a build.finished delivery of every build",
      () => {
        const announced = new Set(finishedOf().map(numberOf));
        return builds.every((b) => announced.has(b.number));
      },
      60_000,
    );
    const seen = new Set<string>();
    const deliveries = finishedOf().filter((r) => !seen.has(r.delivery) && seen.add(r.delivery));
    expect(deliveries.every((r) => r.verified)).toBe(true);
    expect(deliveries.map(numberOf).sort((x, y) => x - y)).toEqual(builds.map((b) => b.number).sort((x, y) => x - y));

    process.stderr.write(
      `[scale-out] ${builds.length} builds (${answered} answered 201, ${failedCreates} creates cut by a kill), ` +
        `${scriptJobs.length} jobs each run once; killed ${killed.join(", ")}\n`,
    );
  }, 420_000);

  it("spread calls over both replicas of every service, the restarted ones included", async () => {
    // Connections end after 5 s, so within a few seconds every client has opened new ones through the balancers.
    await sleep(6_000);
    // Only webhook reads reach the notifications service: make some while connections are retired and opened again.
    for (const end = Date.now() + 12_000; Date.now() < end; ) {
      await read("/webhooks");
      await sleep(250);
    }
    const balancers = stack.balancers.filter((b) => !b.name.endsWith("-health"));
    expect(balancers.length).toBeGreaterThanOrEqual(KILL_ORDER.length);
    for (const balancer of balancers) {
      const counts = Object.entries(balancer.connections());
      expect([balancer.name, counts.length]).toEqual([balancer.name, 2]);
      for (const [replica, n] of counts) {
        expect(`${replica}: ${n > 0 ? "used" : "never used"}`).toBe(`${replica}: used`);
      }
    }
    // Each backend replica now running (a restarted one is a new process) has served calls of its own. Reads that
    // reach every service keep coming while connections are retired (every 5 s) and opened again through the
    // balancers, until each replica has served some: a replica restarted after the last build was created may
    // otherwise have had nothing to do (the gateways cache pipelines).
    const slots = stack.replicaSets.filter((s) => s.name !== "gateway").flatMap((s) => s.slots);
    expect(slots).toHaveLength(2 * (KILL_ORDER.length - 1));
    const served = async () => {
      const states: string[] = [];
      for (const slot of slots) {
        const stats = (await (await fetch(`http://127.0.0.1:${slot.healthPort}/stats`)).json()) as { rpcCalls: number };
        states.push(`${slot.name}: ${stats.rpcCalls > 0 ? "served calls" : "idle"}`);
      }
      return states;
    };
    const latest = (
      (await read("/builds?per_page=1")).body as Array<{ number: number; pipeline: { slug: string } }>
    )[0];
    const reads = ["/pipelines", "/builds?per_page=1", "/agents", "/webhooks"];
    if (latest) reads.push(`/pipelines/${latest.pipeline.slug}/builds/${latest.number}/artifacts`);
    const deadline = Date.now() + 40_000;
    let states = await served();
    while (states.some((s) => s.endsWith("idle")) && Date.now() < deadline) {
      for (const path of reads) await read(path);
      await sleep(500);
      states = await served();
    }
    expect(states).toEqual(slots.map((slot) => `${slot.name}: served calls`));
  }, 90_000);
});
