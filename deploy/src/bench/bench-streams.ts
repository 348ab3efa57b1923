/**
 * The `streams` row of `npm run bench` (issue 37, item 4): thousands of protocol-level agents hold StreamPings open on
 * one gateway (docs/architecture.md#streaming-pings), each on its own HTTP/2 connection over the TLS port as a real
 * agent does, while a real streaming agent runs builds on a queue of its own. It reports the gateway's memory per
 * held stream, the CPU the stack spends holding them idle, and the time from a build's create to `job_assigned` on a
 * simulated agent's stream for builds of many parallel jobs on the simulated agents' queue (each simulated agent
 * accepts, starts and finishes its job through the agent API at once, so the next flows), beside the real agent's
 * create → accepted of the same run, alone and during the fan-out.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { agentStreamWire as wire } from "@conveyor/runtime";
import { type Env, envValue } from "../host/paths.js";
import { rssMb } from "./bench-agent-api.js";
import {
  type AgentBenchTarget,
  agentAndPipeline,
  arrange,
  cpuAll,
  dispatchLatencies,
  percentile,
  simulatedAgents,
} from "./bench-agents.js";

/** The path of the agent's streaming pings (services/gateway/src/agent-stream/stream-route.ts). */
const STREAM_PINGS_PATH = "/agentedge.v1.AgentEdgeService/StreamPings";

/**
 * How often a simulated agent heartbeats, as a real one does beside its stream (AGENT_HEARTBEAT_INTERVAL_S's
 * default, docs/configuration.md): an agent neither pinged nor heard from for a minute is marked lost.
 */
const HEARTBEAT_MS = 10_000;

/** The queue of the simulated agents and of the fan-out pipeline's jobs. */
const QUEUE = "bench-streams";

/**
 * BENCH_STREAM_AGENTS (2,000) simulated agents, held BENCH_STREAM_HOLD (30) s; builds of BENCH_STREAM_PARALLELISM
 * (20) jobs until BENCH_STREAM_JOBS (400) assignments are timed; BENCH_STREAM_BASELINE (30) builds of the real agent.
 */
export function streamBenchSettings(env: Env) {
  const int = (name: string, fallback: number) => {
    const value = Number(envValue(env, name) ?? fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return {
    agents: int("BENCH_STREAM_AGENTS", 2_000),
    holdSec: int("BENCH_STREAM_HOLD", 30),
    parallelism: int("BENCH_STREAM_PARALLELISM", 20),
    jobs: int("BENCH_STREAM_JOBS", 400),
    baselineBuilds: int("BENCH_STREAM_BASELINE", 30),
  };
}

export interface StreamBenchResult {
  agents: number;
  /** Streams that answered their first message, and the time from the first connect to the last first message. */
  opened: number;
  openMs: number;
  /** Streams the gateway ended before the bench closed them, by gRPC status (a stream must stay open). */
  endedEarly: Record<string, number>;
  /** The gateway's resident memory (MiB): before the streams, all open, after the hold, after they closed. */
  gatewayRssMb?: { before: number; open: number; held: number; closed: number };
  /** CPU milliseconds per second of each process: idle before the streams, and over the hold with them open. */
  cpuMsPerSec: { idle: Record<string, number>; held: Record<string, number> };
  holdSec: number;
  /** The real streaming agent's create → accepted, alone before the streams and while the fan-out ran. */
  realAlone: { builds: number; p50Ms: number; p99Ms: number };
  realDuring: { builds: number; p50Ms: number; p99Ms: number };
  /** Create → job_assigned on a simulated agent's stream. */
  fanOut: { builds: number; parallelism: number; assignments: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** Simulated agents that got at least one job; jobs never told to any stream within 60 s of their build's create. */
  agentsWithJobs: number;
  missing: number;
  /** Agent API calls of the simulated agents (accept, start, finish, heartbeats) that failed. */
  jobErrors: number;
  /** The simulated agents' accepts (PUT …/accept, told → answered), those answered. */
  accept: { count: number; p50Ms: number; p99Ms: number };
  /** The bench process's open-file limit (each stream is a connection here and one at the gateway). */
  openFileLimit: string;
}

/** One simulated agent's stream. */
interface Sim {
  id: string;
  token: string;
  session?: http2.ClientHttp2Session;
  /** Settles with the first message (or the stream's end before it). */
  first: Promise<void>;
  /** Set by the bench before it closes the stream; `ended` once the stream ended (counted when not closing). */
  closing: boolean;
  ended: boolean;
  jobs: number;
}

/** The open-file limit of this process, as /proc tells it. */
function openFileLimit(): string {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    return line?.split(/\s{2,}/)[1] ?? "unknown";
  } catch {
    return "unknown";
  }
}

const cpuRate = (before: Record<string, number>, after: Record<string, number>, seconds: number) =>
  Object.fromEntries(
    Object.keys(after).map((name) => [name, (((after[name] ?? 0) - (before[name] ?? 0)) * 1000) / seconds]),
  );

export async function runStreamBench(
  target: AgentBenchTarget & { agentTls: { url: string; trustFile: string } },
  env: Env,
  say: (line: string) => void,
): Promise<StreamBenchResult> {
  const settings = streamBenchSettings(env);
  const work = mkdtempSync(join(tmpdir(), "conveyor-bench-streams-"));
  const arranged = await arrange(target, work, { polling: false });
  const real = await agentAndPipeline(arranged, "bench-streams-real", target.agentTls.url, {
    trustFile: target.agentTls.trustFile,
  });
  const sims: Sim[] = [];
  const gatewayPid = target.pids.gateway;
  let heartbeating = true;
  try {
    const fan = await agentAndPipeline(arranged, QUEUE, target.agentTls.url, {
      parallelism: settings.parallelism,
      agent: false,
    });
    await sleep(3_000);
    say(`streams: the real agent alone, ${settings.baselineBuilds} builds…`);
    const alone = await dispatchLatencies(
      target,
      { ...arranged, pipeline: real.pipeline },
      settings.baselineBuilds,
      () => {},
    );

    say(`streams: registering ${settings.agents} protocol-level agents…`);
    const registered = await simulatedAgents(target, arranged.registration, settings.agents, QUEUE);
    await sleep(2_000);
    const idleSec = 5;
    const cpuIdle0 = cpuAll(target.pids);
    await sleep(idleSec * 1000);
    const cpuIdle = cpuRate(cpuIdle0, cpuAll(target.pids), idleSec);
    const rssBefore = rssMb(gatewayPid);

    // Jobs told to a stream: when (performance.now()) and to whom.
    const assigned = new Map<string, { at: number; agent: string }>();
    const jobsDone = new Set<string>();
    const endedEarly: Record<string, number> = {};
    let jobErrors = 0;
    const base = target.apiUrl;
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Token ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
      return JSON.parse(text || "{}") as Record<string, unknown>;
    };
    /** What a simulated agent does with a job: accept, start and finish it at once (its log is another row's). */
    const acceptMs: number[] = [];
    const runJob = async (sim: Sim, jobId: string) => {
      try {
        const told = performance.now();
        const accepted = await call("PUT", `/v3/jobs/${jobId}/accept`, sim.token);
        acceptMs.push(performance.now() - told);
        const jobToken = String(accepted.token);
        const now = () => new Date().toISOString();
        await call("PUT", `/v3/jobs/${jobId}/start`, jobToken, { started_at: now() });
        await call("PUT", `/v3/jobs/${jobId}/finish`, jobToken, {
          exit_status: "0",
          finished_at: now(),
          chunks_failed_count: 0,
        });
      } catch (err) {
        jobErrors++;
        if (jobErrors <= 3) say(`  a simulated agent's job failed: ${(err as Error).message}`);
      } finally {
        jobsDone.add(jobId);
      }
    };

    const origin = new URL(target.agentTls.url).origin;
    const ca = readFileSync(target.agentTls.trustFile);
    const open = (agent: { id: string; token: string }): Sim => {
      const sim: Sim = { ...agent, first: Promise.resolve(), closing: false, ended: false, jobs: 0 };
      sim.first = new Promise<void>((resolve) => {
        // One connection per agent, as each real agent has its own.
        const session = http2.connect(origin, { ca });
        sim.session = session;
        const ended = (status: string) => {
          resolve();
          if (sim.closing || sim.ended) return;
          sim.ended = true;
          endedEarly[status] = (endedEarly[status] ?? 0) + 1;
        };
        session.on("error", () => ended("connection error"));
        session.on("close", () => ended("connection closed"));
        const stream = session.request({
          ":method": "POST",
          ":path": STREAM_PINGS_PATH,
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Token ${agent.token}`,
        });
        stream.end(wire.frame(wire.encodeRequest(agent.id)));
        let buffered = Buffer.alloc(0);
        stream.on("data", (chunk: Buffer) => {
          const { messages, rest } = wire.unframe(Buffer.concat([buffered, chunk]));
          buffered = Buffer.from(rest);
          for (const m of messages) {
            resolve();
            const action = wire.decodeAction(m);
            if (action?.kind === "job_assigned" && !assigned.has(action.jobId)) {
              assigned.set(action.jobId, { at: performance.now(), agent: agent.id });
              sim.jobs++;
              void runJob(sim, action.jobId);
            }
          }
        });
        stream.on("trailers", (trailers) => ended(String(trailers["grpc-status"] ?? "none")));
        stream.on("response", (headers) => {
          if (headers["grpc-status"] !== undefined) ended(String(headers["grpc-status"]));
        });
        stream.on("error", () => ended("error"));
        stream.resume();
      });
      return sim;
    };

    // Every simulated agent heartbeats from when its stream opens until the bench closes them (from a random start).
    let heartbeatErrors = 0;
    const heartbeats: Promise<void>[] = [];
    const heartbeat = async (sim: Sim) => {
      await sleep(Math.random() * HEARTBEAT_MS);
      while (heartbeating) {
        await call("POST", "/v3/heartbeat", sim.token, { sent_at: new Date().toISOString() }).catch(() => {
          heartbeatErrors++;
        });
        await sleep(HEARTBEAT_MS);
      }
    };

    say(`streams: opening ${registered.length} streams, one HTTP/2 connection each…`);
    const openStarted = performance.now();
    for (let at = 0; at < registered.length; at += 50) {
      const batch = registered.slice(at, at + 50).map(open);
      sims.push(...batch);
      heartbeats.push(...batch.map(heartbeat));
      await Promise.all(batch.map((s) => s.first));
    }
    const openMs = performance.now() - openStarted;
    const earlyAtOpen = Object.values(endedEarly).reduce((a, b) => a + b, 0);
    await sleep(2_000);
    const rssOpen = rssMb(gatewayPid);
    say(`streams: holding ${sims.length} streams ${settings.holdSec} s…`);
    const cpuHold0 = cpuAll(target.pids);
    await sleep(settings.holdSec * 1000);
    const cpuHeld = cpuRate(cpuHold0, cpuAll(target.pids), settings.holdSec);
    const rssHeld = rssMb(gatewayPid);

    say(
      `streams: builds of ${settings.parallelism} jobs on the simulated agents' queue until ${settings.jobs} are assigned, while the real agent runs builds…`,
    );
    const latencies: number[] = [];
    let missing = 0;
    let fanBuilds = 0;
    let stop = false;
    const during: number[] = [];
    const realLoop = (async () => {
      while (!stop) {
        during.push(...(await dispatchLatencies(target, { ...arranged, pipeline: real.pipeline }, 1, () => {})));
      }
    })();
    const stopProfiles = target.profiler?.window("fan-out", target.pids);
    try {
      while (latencies.length < settings.jobs) {
        await sleep(Math.random() * 1000);
        const started = performance.now();
        const res = await fetch(`${base}/v2/organizations/${target.orgSlug}/pipelines/${fan.pipeline.slug}/builds`, {
          method: "POST",
          headers: arranged.auth,
          body: JSON.stringify({ commit: "HEAD", branch: "main", message: `streams ${fanBuilds}` }),
        });
        if (res.status !== 201) throw new Error(`bench build: ${res.status} ${await res.text()}`);
        const build = (await res.json()) as { jobs?: Array<{ id: string; type?: string }> };
        const jobs = (build.jobs ?? []).filter((j) => j.type === undefined || j.type === "script").map((j) => j.id);
        if (jobs.length === 0) throw new Error("the fan-out build has no jobs");
        fanBuilds++;
        const deadline = Date.now() + 60_000;
        while (jobs.some((id) => !jobsDone.has(id)) && Date.now() < deadline) await sleep(20);
        for (const id of jobs) {
          const told = assigned.get(id);
          if (told) latencies.push(told.at - started);
          else missing++;
        }
        say(`  ${latencies.length} assignments`);
        if (missing > 0) break;
      }
    } finally {
      stop = true;
      await realLoop;
      await stopProfiles?.();
    }
    const agentsWithJobs = sims.filter((s) => s.jobs > 0).length;

    say("streams: closing…");
    heartbeating = false;
    for (const sim of sims) sim.closing = true;
    for (let at = 0; at < sims.length; at += 100) {
      await Promise.all(
        sims
          .slice(at, at + 100)
          .map((s) =>
            fetch(`${base}/v3/disconnect`, { method: "POST", headers: { authorization: `Token ${s.token}` } }),
          ),
      );
    }
    for (const sim of sims) sim.session?.close();
    await Promise.all(heartbeats);
    await sleep(3_000);
    const rssClosed = rssMb(gatewayPid);
    const stats = (xs: number[]) => ({ p50Ms: percentile(xs, 50), p99Ms: percentile(xs, 99) });
    return {
      agents: registered.length,
      opened: sims.length - earlyAtOpen,
      openMs,
      endedEarly,
      ...(rssBefore !== undefined && rssOpen !== undefined && rssHeld !== undefined && rssClosed !== undefined
        ? { gatewayRssMb: { before: rssBefore, open: rssOpen, held: rssHeld, closed: rssClosed } }
        : {}),
      cpuMsPerSec: { idle: cpuIdle, held: cpuHeld },
      holdSec: settings.holdSec,
      realAlone: { builds: alone.length, ...stats(alone) },
      realDuring: { builds: during.length, ...stats(during) },
      fanOut: {
        builds: fanBuilds,
        parallelism: settings.parallelism,
        assignments: latencies.length,
        ...stats(latencies),
        maxMs: Math.max(...latencies),
      },
      agentsWithJobs,
      missing,
      jobErrors: jobErrors + heartbeatErrors,
      accept: { count: acceptMs.length, ...stats(acceptMs) },
      openFileLimit: openFileLimit(),
    };
  } finally {
    heartbeating = false;
    for (const sim of sims) sim.session?.destroy();
    real.agent?.kill("SIGTERM");
    await sleep(500);
    rmSync(work, { recursive: true, force: true });
  }
}

/** Whether the row found something wrong: a job no stream was told of, a stream ended early, a failed agent call. */
export function streamsBroken(r: StreamBenchResult): boolean {
  return r.missing > 0 || r.jobErrors > 0 || Object.keys(r.endedEarly).length > 0 || r.opened < r.agents;
}

/** The `streams` rows, with the real streaming agent's dispatch of the same run as the baseline. */
export function printStreamRows(r: StreamBenchResult, say: (line: string) => void): void {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : "–");
  const ratio = (x: number) =>
    Number.isFinite(x) && r.realAlone.p50Ms > 0 ? `${(x / r.realAlone.p50Ms).toFixed(1)}×` : "–";
  say(
    `\nstreams${" ".repeat(27)} ${"count".padStart(9)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)}  p50, p99 / real agent's p50 alone`,
  );
  const row = (name: string, count: number, p50: number, p99: number, extra = "") =>
    say(
      `${name.padEnd(34)} ${String(count).padStart(9)} ${f(p50).padStart(7)} ${f(p99).padStart(7)}  ${ratio(p50)}, ${ratio(p99)}${extra}`,
    );
  row("real agent: create → accepted", r.realAlone.builds, r.realAlone.p50Ms, r.realAlone.p99Ms);
  row(
    `fan-out, ${r.agents} streams: → assigned`,
    r.fanOut.assignments,
    r.fanOut.p50Ms,
    r.fanOut.p99Ms,
    `${r.missing ? `   (${r.missing} jobs never told!)` : ""}${r.jobErrors ? `   (${r.jobErrors} agent calls failed!)` : ""}`,
  );
  row("real agent, during the fan-out", r.realDuring.builds, r.realDuring.p50Ms, r.realDuring.p99Ms);
  say(
    `${r.fanOut.builds} builds of ${r.fanOut.parallelism} jobs, max ${f(r.fanOut.maxMs)} ms; ${r.agentsWithJobs} of ${r.agents} simulated agents got a job; their accepts (told → answered): p50 ${f(r.accept.p50Ms)} ms, p99 ${f(r.accept.p99Ms)} ms over ${r.accept.count}`,
  );
  const early = Object.entries(r.endedEarly);
  say(
    `${r.opened} of ${r.agents} streams opened in ${(r.openMs / 1000).toFixed(1)} s (50 at a time, one connection each; open-file limit ${r.openFileLimit})${early.length ? `; ended by the gateway: ${early.map(([s, n]) => `${n} with status ${s}`).join(", ")}!` : ""}`,
  );
  const m = r.gatewayRssMb;
  if (m)
    say(
      `gateway memory (MiB): ${m.before.toFixed(0)} before, ${m.open.toFixed(0)} with the streams open, ${m.held.toFixed(0)} after ${r.holdSec} s held, ${m.closed.toFixed(0)} after they closed: ${(((m.held - m.before) * 1024) / r.agents).toFixed(1)} KiB per stream held`,
    );
  const cpu = Object.keys(r.cpuMsPerSec.held)
    .map((name) => [name, r.cpuMsPerSec.idle[name] ?? 0, r.cpuMsPerSec.held[name] ?? 0] as const)
    .filter(([, idle, held]) => idle > 0.5 || held > 0.5);
  if (cpu.length > 0)
    say(
      `CPU ms per second, idle → ${r.agents} streams held: ${cpu.map(([name, idle, held]) => `${name} ${idle.toFixed(0)} → ${held.toFixed(0)}`).join(", ")}`,
    );
}
