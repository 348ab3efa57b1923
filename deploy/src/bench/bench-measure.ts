import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { cpuAll } from "./bench-agents.js";
import { type BenchSettings, median } from "./bench-stats.js";

// How `npm run bench` measures one target: autocannon runs (with CPU per request of the stack's processes for
// writes), single requests on an idle stack, and the hello-world baseline's own process.

/** One autocannon run. */
export interface Measurement {
  target: string;
  trial: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx, plus connection errors and timeouts; a run with any is not a valid figure. */
  bad: number;
  /** 2xx answers (for creates: builds acknowledged). */
  ok: number;
  /** CPU milliseconds per request of each stack process (POST targets on a stack the bench started). */
  cpuMsPerRequest?: Record<string, number>;
}

export interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** A POST target (build creation) and its body; GET otherwise. */
  post?: string;
  /** Connections for this target, when not the setting's (creates run at 10, as the issue measures them). */
  connections?: number;
  /** Sent with If-None-Match naming the current answer: 304 is what it should get. */
  conditional?: boolean;
  /** Sent with `Accept-Encoding: gzip`: a gzipped body is what it should get. */
  gzip?: boolean;
  /** Report each process's CPU per request (always for POST targets). */
  cpu?: boolean;
}

/** The headers of a GET of `target`: with If-None-Match and the ETag it has now, when conditional. */
async function headersOf(target: Target): Promise<Record<string, string>> {
  if (!target.conditional) return target.headers;
  const res = await fetch(target.url, { headers: target.headers });
  await res.arrayBuffer();
  const etag = res.headers.get("etag");
  if (!etag) throw new Error(`${target.name}: ${target.url} sent no ETag`);
  return { ...target.headers, "if-none-match": etag };
}

/** How many sequential requests measure a route's latency on an idle stack. */
const IDLE_REQUESTS = 30;

/** How long the stack rests after the warm-up before single requests are timed. */
export const IDLE_REST_MS = 2_000;

/** The median time of one request at a time, per GET target (each answered as expected first). */
export async function measureIdle(targets: readonly Target[]): Promise<Map<string, number>> {
  const idleMs = new Map<string, number>();
  for (const t of targets) {
    if (t.post) continue;
    const headers = await headersOf(t);
    const res = await fetch(t.url, { headers });
    const expected = t.conditional ? 304 : 200;
    if (res.status !== expected)
      throw new Error(`${t.name}: ${t.url} answered ${res.status}, not ${expected}: ${await res.text()}`);
    if (t.gzip && res.headers.get("content-encoding") !== "gzip")
      throw new Error(`${t.name}: ${t.url} answered without Content-Encoding: gzip`);
    await res.arrayBuffer();
    const times: number[] = [];
    for (let i = 0; i < IDLE_REQUESTS; i++) {
      const started = performance.now();
      await (await fetch(t.url, { headers })).arrayBuffer();
      times.push(performance.now() - started);
    }
    idleMs.set(t.name, median(times));
  }
  return idleMs;
}

/** Build creation is measured at this concurrency. */
export const CREATE_CONNECTIONS = 10;

/** One autocannon run of `target`; for a write on a stack the bench started, the CPU it cost each process. */
export async function measure(
  target: Target,
  trial: number,
  settings: BenchSettings,
  durationSec = settings.durationSec,
  pids: Record<string, number> = {},
) {
  const headers = target.post ? { ...target.headers, "content-type": "application/json" } : await headersOf(target);
  // A write's cost is spread over every process; CPU per request is a steadier figure than req/s on a noisy machine.
  const withCpu = (target.post !== undefined || target.cpu === true) && Object.keys(pids).length > 0;
  const cpuBefore = withCpu ? cpuAll(pids) : {};
  const result = await autocannon({
    url: target.url,
    connections: target.connections ?? settings.connections,
    duration: durationSec,
    headers,
    ...(target.post ? { method: "POST" as const, body: target.post } : {}),
  });
  const m: Measurement = {
    target: target.name,
    trial,
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    // A conditional target's 304s are its answers; anything else but 200 is not.
    bad: result.non2xx - (target.conditional ? result["3xx"] : 0) + result.errors + result.timeouts,
    ok: result["2xx"],
  };
  if (withCpu) {
    const cpuAfter = cpuAll(pids);
    const requests = Math.max(result.requests.total, 1);
    m.cpuMsPerRequest = Object.fromEntries(
      Object.keys(pids).map((name) => [name, (((cpuAfter[name] ?? 0) - (cpuBefore[name] ?? 0)) * 1000) / requests]),
    );
  }
  return m;
}

/** Starts the hello-world baseline in its own process and returns its URL and a stop function. */
export async function startHello(): Promise<{ url: string; stop: () => Promise<void> }> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "hello-server.js");
  const child = spawn(process.execPath, [script], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, PORT: "0" },
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.once("line", (l) => {
      rl.close();
      resolve(l);
    });
    child.once("exit", (code) => reject(new Error(`the hello-world server exited with code ${code}`)));
  });
  const { port } = JSON.parse(line) as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** A probe read the stack answers in at most this when settled (the read cache's barrier waits up to 250 ms). */
const SETTLED_MS = 25;
/** How long the bench waits at most for the stack to settle. */
const SETTLE_LIMIT_MS = 60_000;

/**
 * Waits until the stack has digested the writes before (the bench's own creates start events, sweeps and the read
 * cache's invalidations): until the median of five single reads of `probe` is at most SETTLED_MS, or SETTLE_LIMIT_MS
 * passed. Answers how long it waited and the last median, so rows measured after it say on what stack they ran.
 */
export async function settle(probe: Target): Promise<{ waitedMs: number; probeMs: number; settled: boolean }> {
  const started = performance.now();
  for (;;) {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await (await fetch(probe.url, { headers: probe.headers })).arrayBuffer();
      times.push(performance.now() - t0);
    }
    const probeMs = median(times);
    const waitedMs = performance.now() - started;
    if (probeMs <= SETTLED_MS || waitedMs >= SETTLE_LIMIT_MS)
      return { waitedMs, probeMs, settled: probeMs <= SETTLED_MS };
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
