import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { AgentsService } from "@conveyor/proto/agents";
import { JobStateChangedSchema } from "@conveyor/proto/builds";
import { createServiceClient, decodeEvent, SUBJECTS } from "@conveyor/runtime";
import { connect } from "@nats-io/transport-node";
import { type Env, envValue } from "../host/paths.js";
import { agentDirs, agentEnv, agentStartArgs } from "../stack/local-agents.js";
import { type JobLifeResult, runJobLife } from "./bench-job-life.js";
import type { Profiler } from "./cpu-profiles.js";

/** What the agent benchmarks need of a running stack. */
export interface AgentBenchTarget {
  apiUrl: string;
  apiToken: string;
  orgSlug: string;
  agentsUrl: string;
  natsUrl: string;
  agentBin: string;
  /** Processes whose CPU time to report (name → pid); empty for a stack the bench did not start. */
  pids: Record<string, number>;
  /** The agents service's health port /stats, for its database command counts. */
  agentsStatsUrl?: string;
  /** The agent API on the gateway's TLS port and the file agents trust it by: the streaming rows (none: skipped). */
  agentTls?: { url: string; trustFile: string };
  /** CPU profiles of the measured phases (BENCH_PROFILE; cpu-profiles.ts); none: not profiled. */
  profiler?: Profiler;
}

/** How many builds and simulated agents: BENCH_DISPATCH_BUILDS (200), BENCH_PING_AGENTS (500), … */
export function agentBenchSettings(env: Env) {
  const int = (name: string, fallback: number) => {
    const value = Number(envValue(env, name) ?? fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return {
    dispatchBuilds: int("BENCH_DISPATCH_BUILDS", 200),
    gapBuilds: int("BENCH_GAP_BUILDS", 20),
    pingAgents: int("BENCH_PING_AGENTS", 500),
    pingIntervalMs: int("BENCH_PING_INTERVAL_S", 2) * 1000,
    pingPhaseSec: int("BENCH_PING_PHASE", 10),
    lifeJobs: int("BENCH_LIFE_JOBS", 50),
    lifeChunks: int("BENCH_LIFE_CHUNKS", 5),
  };
}

/** The p-th percentile (0..100) of some numbers, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** CPU seconds (user + system) a process has used, from /proc; undefined when it cannot be read. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name, in clock ticks (100 Hz).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** CPU seconds of each named process (NaN where it cannot be read). */
export const cpuAll = (pids: Record<string, number>) =>
  Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid) ?? Number.NaN]));

async function mongoCommands(statsUrl: string | undefined): Promise<number | undefined> {
  if (!statsUrl) return undefined;
  const stats = (await (await fetch(statsUrl)).json()) as { mongoCommands?: Record<string, number> };
  return Object.values(stats.mongoCommands ?? {}).reduce((a, b) => a + b, 0);
}

/**
 * A bench organization's cluster, registration token and pipeline on a local repository, with one real agent polling
 * on the plain port (none with `polling: false`).
 */
export async function arrange(target: AgentBenchTarget, work: string, opts: { polling?: boolean } = {}) {
  const auth = { authorization: `Bearer ${target.apiToken}`, "content-type": "application/json" };
  const org = (await (
    await fetch(`${target.apiUrl}/v2/organizations/${target.orgSlug}`, { headers: auth })
  ).json()) as {
    id: string;
  };
  const agents = createServiceClient(AgentsService, target.agentsUrl);
  const { cluster } = await agents.createCluster({ organizationId: org.id, name: `bench-agents-${Date.now()}` });
  const { secret } = await agents.createAgentToken({ organizationId: org.id, clusterId: cluster?.id ?? "" });
  const repo = join(work, "repo");
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "README.md"), "bench\n");
  const git = (...args: string[]) =>
    execFileSync("git", args, {
      cwd: repo,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "bench",
        GIT_AUTHOR_EMAIL: "b@x",
        GIT_COMMITTER_NAME: "bench",
        GIT_COMMITTER_EMAIL: "b@x",
      },
    });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "bench");
  writeFileSync(join(work, "empty.cfg"), "");
  const base = { target, work, auth, repo, clusterId: cluster?.id ?? "", registration: secret };
  // The polling row's agent, on the plain port.
  const { pipeline, agent } = await agentAndPipeline(base, "bench-dispatch", `${target.apiUrl}/v3`, {
    agent: opts.polling ?? true,
  });
  return { ...base, pipeline, agent };
}

/**
 * A pipeline of one `true` step on `queue` (`parallelism` jobs) and one real agent of that queue on `endpoint`: over
 * https it streams its pings (`--ping-mode auto`), over http it polls.
 */
export async function agentAndPipeline(
  base: {
    target: AgentBenchTarget;
    work: string;
    auth: Record<string, string>;
    repo: string;
    clusterId: string;
    registration: string;
  },
  queue: string,
  endpoint: string,
  opts: { trustFile?: string; parallelism?: number; agent?: boolean } = {},
) {
  const { target, work, auth } = base;
  const parallel = opts.parallelism ? `    parallelism: ${opts.parallelism}\n` : "";
  const res = await fetch(`${target.apiUrl}/v2/organizations/${target.orgSlug}/pipelines`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      name: `Bench ${queue} ${Date.now()}`,
      repository: base.repo,
      cluster_id: base.clusterId,
      configuration: `steps:\n  - label: dispatched\n    command: 'true'\n${parallel}    agents:\n      queue: ${queue}\n`,
    }),
  });
  if (res.status !== 201) throw new Error(`bench pipeline: ${res.status} ${await res.text()}`);
  const pipeline = (await res.json()) as { id: string; slug: string };
  if (opts.agent === false) return { pipeline, agent: undefined };
  const dirs = agentDirs(work, `bench-${queue}`);
  for (const dir of [dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) mkdirSync(dir, { recursive: true });
  const agent: ChildProcess = spawn(
    target.agentBin,
    agentStartArgs({
      endpoint,
      name: `bench-${queue}-${process.pid}`,
      dirs,
      config: join(work, "empty.cfg"),
      tags: [`queue=${queue}`],
    }),
    {
      env: agentEnv({ PATH: process.env.PATH, HOME: process.env.HOME }, base.registration, opts.trustFile),
      stdio: "ignore",
    },
  );
  // A bench that dies (an uncaught error) must not leave the agent running, as the launcher's exit hook stops the stack.
  const stopAgent = () => agent.kill("SIGKILL");
  process.once("exit", stopAgent);
  agent.once("exit", () => process.off("exit", stopAgent));
  return { pipeline, agent };
}

/** Latencies of build create → job accepted by the real agent, measured from NATS job events. */
export async function dispatchLatencies(
  target: AgentBenchTarget,
  arranged: { pipeline: { id: string; slug: string }; auth: Record<string, string> },
  builds: number,
  progress: (done: number) => void,
): Promise<number[]> {
  const nc = await connect({ servers: target.natsUrl });
  const accepted = new Map<number, number>();
  const finished = new Map<number, number>();
  const sub = nc.subscribe(SUBJECTS.builds.jobStateChanged);
  void (async () => {
    for await (const msg of sub) {
      const event = decodeEvent(JobStateChangedSchema, msg.data);
      if (event.pipelineId !== arranged.pipeline.id || !event.job) continue;
      if (event.job.state === "accepted") accepted.set(event.buildNumber, performance.now());
      if (["passed", "failed", "canceled"].includes(event.job.state))
        finished.set(event.buildNumber, performance.now());
    }
  })();
  await nc.flush();
  const latencies: number[] = [];
  try {
    for (let i = 0; i < builds; i++) {
      // Builds arrive at random points of the agent's ping cycle, as real ones do.
      await sleep(Math.random() * 1000);
      const started = performance.now();
      const res = await fetch(
        `${target.apiUrl}/v2/organizations/${target.orgSlug}/pipelines/${arranged.pipeline.slug}/builds`,
        {
          method: "POST",
          headers: arranged.auth,
          body: JSON.stringify({ commit: "HEAD", branch: "main", message: `bench ${i}` }),
        },
      );
      if (res.status !== 201) throw new Error(`bench build: ${res.status} ${await res.text()}`);
      const { number } = (await res.json()) as { number: number };
      const deadline = Date.now() + 60_000;
      while (!finished.has(number)) {
        if (Date.now() > deadline) throw new Error(`bench build ${number} did not finish within 60 s`);
        await sleep(20);
      }
      latencies.push((accepted.get(number) ?? Number.NaN) - started);
      progress(i + 1);
    }
  } finally {
    sub.unsubscribe();
    await nc.close();
  }
  return latencies;
}

/**
 * The gap between two jobs on one agent: builds of two parallel jobs on a queue of one agent, each measured from the
 * first job's end to the second's accept (NATS job events).
 */
async function jobGaps(
  target: AgentBenchTarget,
  arranged: { pipeline: { id: string; slug: string }; auth: Record<string, string> },
  builds: number,
): Promise<number[]> {
  const nc = await connect({ servers: target.natsUrl });
  const times = new Map<number, { finished: number[]; accepted: number[] }>();
  const sub = nc.subscribe(SUBJECTS.builds.jobStateChanged);
  void (async () => {
    for await (const msg of sub) {
      const event = decodeEvent(JobStateChangedSchema, msg.data);
      if (event.pipelineId !== arranged.pipeline.id || !event.job) continue;
      const t = times.get(event.buildNumber) ?? { finished: [], accepted: [] };
      times.set(event.buildNumber, t);
      if (event.job.state === "accepted") t.accepted.push(performance.now());
      if (["passed", "failed", "canceled"].includes(event.job.state)) t.finished.push(performance.now());
    }
  })();
  await nc.flush();
  const gaps: number[] = [];
  try {
    for (let i = 0; i < builds; i++) {
      const res = await fetch(
        `${target.apiUrl}/v2/organizations/${target.orgSlug}/pipelines/${arranged.pipeline.slug}/builds`,
        {
          method: "POST",
          headers: arranged.auth,
          body: JSON.stringify({ commit: "HEAD", branch: "main", message: `gap ${i}` }),
        },
      );
      if (res.status !== 201) throw new Error(`bench build: ${res.status} ${await res.text()}`);
      const { number } = (await res.json()) as { number: number };
      const deadline = Date.now() + 60_000;
      while ((times.get(number)?.finished.length ?? 0) < 2) {
        if (Date.now() > deadline) throw new Error(`bench build ${number} did not finish within 60 s`);
        await sleep(20);
      }
      const t = times.get(number);
      const second = t?.accepted[1];
      const first = t?.finished[0];
      if (second !== undefined && first !== undefined) gaps.push(second - first);
    }
  } finally {
    sub.unsubscribe();
    await nc.close();
  }
  return gaps;
}

/** Registers `count` protocol-level agents of `queue` (idle: it has no jobs) and returns their ids and access tokens. */
export async function simulatedAgents(
  target: Pick<AgentBenchTarget, "apiUrl">,
  registration: string,
  count: number,
  queue = "bench-idle",
): Promise<Array<{ id: string; token: string }>> {
  const agents: Array<{ id: string; token: string }> = [];
  for (let start = 0; start < count; start += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, count - start) }, async (_, i) => {
        const headers = { authorization: `Token ${registration}`, "content-type": "application/json" };
        const res = await fetch(`${target.apiUrl}/v3/register`, {
          method: "POST",
          headers,
          body: JSON.stringify({ name: `sim-${start + i}`, hostname: "bench", meta_data: [`queue=${queue}`] }),
        });
        if (res.status >= 300) throw new Error(`register: ${res.status} ${await res.text()}`);
        const { id, access_token } = (await res.json()) as { id: string; access_token: string };
        await fetch(`${target.apiUrl}/v3/connect`, {
          method: "POST",
          headers: { authorization: `Token ${access_token}` },
        });
        return { id, token: access_token };
      }),
    );
    agents.push(...batch);
  }
  return agents;
}

/** Every simulated agent pings every `intervalMs` (from a random start) until `until`; returns ping latencies. */
async function pingLoad(target: AgentBenchTarget, tokens: readonly string[], intervalMs: number, until: number) {
  const latencies: number[] = [];
  let errors = 0;
  await Promise.all(
    tokens.map(async (token) => {
      await sleep(Math.random() * intervalMs);
      while (Date.now() < until) {
        const started = performance.now();
        try {
          const res = await fetch(`${target.apiUrl}/v3/ping`, { headers: { authorization: `Token ${token}` } });
          await res.arrayBuffer();
          if (res.status === 200) latencies.push(performance.now() - started);
          else errors++;
        } catch {
          errors++;
        }
        await sleep(Math.max(0, intervalMs - (performance.now() - started)));
      }
    }),
  );
  return { latencies, errors };
}

export interface AgentBenchResult {
  dispatch: { builds: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** The same with an agent streaming its pings over the TLS port, and the gap between two jobs on it. */
  streaming?: {
    builds: number;
    p50Ms: number;
    p99Ms: number;
    maxMs: number;
    gap: { builds: number; p50Ms: number; p99Ms: number };
  };
  pings: {
    agents: number;
    intervalMs: number;
    idle: { pings: number; p50Ms: number; p99Ms: number; errors: number; mongoCommandsPerPing?: number };
    withBuilds: { pings: number; p50Ms: number; p99Ms: number; errors: number; builds: number };
    /** CPU milliseconds per ping of each process, over the idle phase. */
    cpuMsPerPing: Record<string, number>;
  };
  /** CPU per job from assignment to finish, of protocol-level jobs with a few log chunks each (bench-job-life.ts). */
  jobLife: JobLifeResult;
}

/**
 * The agent rows of `npm run bench` (issue 9): dispatch latency (build create → job accepted by a real agent that
 * pings every second) over many builds, the same with a real agent streaming its pings over the TLS port (issue 37)
 * with the gap between two jobs on it, the CPU one job costs each process from assignment to finish (protocol-level
 * jobs with a few log chunks, issue 37), and ping capacity: hundreds of protocol-level idle agents pinging, first
 * alone (with the database commands and CPU each ping costs), then while the real agent keeps running builds.
 */
export async function runAgentBench(
  target: AgentBenchTarget,
  env: Env,
  say: (line: string) => void,
): Promise<AgentBenchResult> {
  const settings = agentBenchSettings(env);
  const work = mkdtempSync(join(tmpdir(), "conveyor-bench-agents-"));
  const arranged = await arrange(target, work);
  try {
    let streaming: AgentBenchResult["streaming"];
    if (target.agentTls) {
      // The streaming agent first: the polling agent (another queue) idles meanwhile, as it does in the rows after.
      const stream = await agentAndPipeline(arranged, "bench-stream", target.agentTls.url, {
        trustFile: target.agentTls.trustFile,
      });
      const pair = await agentAndPipeline(arranged, "bench-stream", target.agentTls.url, {
        parallelism: 2,
        agent: false,
      });
      try {
        await sleep(3_000);
        say(`dispatch (streaming): ${settings.dispatchBuilds} builds on a real agent streaming its pings…`);
        const latencies = await dispatchLatencies(
          target,
          { ...arranged, pipeline: stream.pipeline },
          settings.dispatchBuilds,
          (n) => {
            if (n % 50 === 0) say(`  ${n} builds`);
          },
        );
        say(`dispatch (streaming): ${settings.gapBuilds} builds of two jobs on that one agent…`);
        const gaps = await jobGaps(target, { ...arranged, pipeline: pair.pipeline }, settings.gapBuilds);
        streaming = {
          builds: latencies.length,
          p50Ms: percentile(latencies, 50),
          p99Ms: percentile(latencies, 99),
          maxMs: Math.max(...latencies),
          gap: { builds: gaps.length, p50Ms: percentile(gaps, 50), p99Ms: percentile(gaps, 99) },
        };
      } finally {
        stream.agent?.kill("SIGTERM");
      }
    }
    say(`dispatch (polling): ${settings.dispatchBuilds} builds on a real agent…`);
    const dispatch = await dispatchLatencies(target, arranged, settings.dispatchBuilds, (n) => {
      if (n % 50 === 0) say(`  ${n} builds`);
    });
    say(`job life: ${settings.lifeJobs} jobs of ${settings.lifeChunks} log chunks on a protocol-level agent…`);
    const life = await agentAndPipeline(arranged, "bench-life", `${target.apiUrl}/v3`, { agent: false });
    const stopProfiles = target.profiler?.window("job-life", target.pids);
    const jobLife = await runJobLife(
      {
        apiUrl: target.apiUrl,
        orgSlug: target.orgSlug,
        auth: arranged.auth,
        pipelineSlug: life.pipeline.slug,
        registration: arranged.registration,
        queue: "bench-life",
        pids: target.pids,
        cpuAll,
      },
      settings.lifeJobs,
      settings.lifeChunks,
    );
    await stopProfiles?.();
    say(`pings: registering ${settings.pingAgents} protocol-level agents…`);
    const tokens = (await simulatedAgents(target, arranged.registration, settings.pingAgents)).map((a) => a.token);

    say(
      `pings: ${settings.pingAgents} idle agents every ${settings.pingIntervalMs / 1000} s for ${settings.pingPhaseSec} s…`,
    );
    const warmUntil = Date.now() + settings.pingIntervalMs * 2;
    await pingLoad(target, tokens, settings.pingIntervalMs, warmUntil);
    const cpuBefore = cpuAll(target.pids);
    const commandsBefore = await mongoCommands(target.agentsStatsUrl);
    const idle = await pingLoad(target, tokens, settings.pingIntervalMs, Date.now() + settings.pingPhaseSec * 1000);
    const commandsAfter = await mongoCommands(target.agentsStatsUrl);
    const cpuAfter = cpuAll(target.pids);

    say(`pings: the same while the real agent runs builds, ${settings.pingPhaseSec} s…`);
    const until = Date.now() + settings.pingPhaseSec * 1000;
    let busyBuilds = 0;
    const [mixed] = await Promise.all([
      pingLoad(target, tokens, settings.pingIntervalMs, until),
      (async () => {
        while (Date.now() < until - 3000) {
          busyBuilds += (await dispatchLatencies(target, arranged, 1, () => {})).length;
        }
      })(),
    ]);
    await Promise.all(
      tokens.map((token) =>
        fetch(`${target.apiUrl}/v3/disconnect`, { method: "POST", headers: { authorization: `Token ${token}` } }),
      ),
    );
    const pings = idle.latencies.length;
    return {
      dispatch: {
        builds: dispatch.length,
        p50Ms: percentile(dispatch, 50),
        p99Ms: percentile(dispatch, 99),
        maxMs: Math.max(...dispatch),
      },
      ...(streaming ? { streaming } : {}),
      pings: {
        agents: tokens.length,
        intervalMs: settings.pingIntervalMs,
        idle: {
          pings,
          p50Ms: percentile(idle.latencies, 50),
          p99Ms: percentile(idle.latencies, 99),
          errors: idle.errors,
          ...(commandsBefore !== undefined && commandsAfter !== undefined
            ? { mongoCommandsPerPing: (commandsAfter - commandsBefore) / Math.max(pings, 1) }
            : {}),
        },
        withBuilds: {
          pings: mixed.latencies.length,
          p50Ms: percentile(mixed.latencies, 50),
          p99Ms: percentile(mixed.latencies, 99),
          errors: mixed.errors,
          builds: busyBuilds,
        },
        cpuMsPerPing: Object.fromEntries(
          Object.keys(target.pids).map((name) => [
            name,
            (((cpuAfter[name] ?? Number.NaN) - (cpuBefore[name] ?? Number.NaN)) * 1000) / Math.max(pings, 1),
          ]),
        ),
      },
      jobLife,
    };
  } finally {
    arranged.agent?.kill("SIGTERM");
    await sleep(500);
    rmSync(work, { recursive: true, force: true });
  }
}
