/**
 * The `live log fan-out` row of `npm run bench` (docs/pages.md#live-updates): many people's build pages open on one
 * running build, each reading the page's live stream, while an agent uploads its log through the agent API as
 * buildkite-agent does. Each line carries its number; the row reports how long after its chunk's upload began every
 * page had it (p50, p99, max over all pages and lines), any line a page never got, and the gateway's memory before
 * the pages opened, with them open, and after the log was streamed.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { IdentityService, Role } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import { type Env, envValue } from "../host/paths.js";
import { type AgentApiTarget, agentCall, rssMb, runningJob } from "./bench-agent-api.js";
import { percentile } from "./bench-agents.js";

/** What the live benchmark needs of a running stack. */
export interface LiveBenchTarget extends AgentApiTarget {
  identityUrl: string;
  /** The gateway's process, for its memory; undefined for a stack the bench did not start. */
  gatewayPid?: number | undefined;
}

/** BENCH_LIVE_PAGES (200), BENCH_LIVE_CHUNKS (50) uploaded BENCH_LIVE_CHUNK_MS (200) apart, 20 lines each. */
export function liveBenchSettings(env: Env) {
  const int = (name: string, fallback: number) => {
    const value = Number(envValue(env, name) ?? fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return {
    pages: int("BENCH_LIVE_PAGES", 200),
    chunks: int("BENCH_LIVE_CHUNKS", 50),
    chunkEveryMs: int("BENCH_LIVE_CHUNK_MS", 200),
    linesPerChunk: 20,
  };
}

export interface LiveBenchResult {
  pages: number;
  lines: number;
  /** Page × line deliveries measured. */
  deliveries: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** From the first page's request to every page's first events (the build and its jobs). */
  openMs: number;
  /** Page × line deliveries that never came. */
  missing: number;
  /** Pages whose stream did not end when the build finished. */
  unfinished: number;
  /**
   * The gateway's resident memory (MiB): before the pages opened, with them open, at each quarter of the upload,
   * and after the log streamed and the pages closed.
   */
  gatewayRssMb?: { before: number; open: number; during: number[]; after: number };
  logBytes: number;
}

/** People who open the pages: each opens at most this many (below the gateway's default per-person limit). */
const PAGES_PER_PERSON = 10;
/** How often the simulated agent heartbeats while it uploads (the agent's own default is 5 s). */
const HEARTBEAT_MS = 5_000;
/** How long the stack rests after the pages opened, before the first line is uploaded. */
const OPEN_SETTLE_MS = 2_000;

/** Session cookies of `count` people of the organization, signed in by link as `ci-admin user login-link` does. */
async function people(target: LiveBenchTarget, organizationId: string, count: number): Promise<string[]> {
  const identity = createServiceClient(IdentityService, target.identityUrl);
  const cookies: string[] = [];
  for (let i = 0; i < count; i++) {
    const { user } = await identity.createUser({
      name: `Bench Reader ${i}`,
      email: `bench-live-${Date.now()}-${i}@example.com`,
    });
    await identity.addMember({ organization: organizationId, userId: user?.id ?? "", role: Role.MEMBER });
    const link = await identity.createSignInLink({ userId: user?.id ?? "" });
    const session = await identity.signInWithLink({ secret: link.secret });
    cookies.push(`conveyor_session=${session.secret}`);
  }
  return cookies;
}

/** One open page's stream: when it first had each line, and whether it ended. */
interface Page {
  seen: Map<number, number>;
  ready: boolean;
  ended: boolean;
  abort: AbortController;
  done: Promise<void>;
}

const LINE = /bench line (\d+) /g;

function openPage(url: string, cookie: string): Page {
  const page: Page = {
    seen: new Map(),
    ready: false,
    ended: false,
    abort: new AbortController(),
    done: Promise.resolve(),
  };
  page.done = (async () => {
    const res = await fetch(url, { headers: { cookie, accept: "text/event-stream" }, signal: page.abort.signal });
    if (res.status !== 200 || !res.body) throw new Error(`live stream answered ${res.status}: ${await res.text()}`);
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const piece of res.body) {
        const at = performance.now();
        buffer += decoder.decode(piece, { stream: true });
        for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (block.startsWith("event: jobs")) page.ready = true;
          if (block.startsWith("event: end")) page.ended = true;
          if (!block.startsWith("event: log")) continue;
          // Every chunk ends its lines with a newline: a line is whole in the first update that holds it.
          for (const m of block.matchAll(LINE)) {
            const n = Number(m[1]);
            if (!page.seen.has(n)) page.seen.set(n, at);
          }
        }
      }
    } catch (err) {
      if (!page.abort.signal.aborted) throw err;
    }
  })();
  return page;
}

async function until(what: string, test: () => boolean, ms: number) {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Runs the benchmark on `target` and returns its figures. */
export async function runLiveBench(
  target: LiveBenchTarget,
  env: Env,
  say: (line: string) => void,
): Promise<LiveBenchResult> {
  const settings = liveBenchSettings(env);
  const job = await runningJob(target);
  const readers = await people(target, String(job.org.id), Math.ceil(settings.pages / PAGES_PER_PERSON));
  say(`live fan-out: ${settings.pages} pages of ${readers.length} people on one running build`);
  const before = rssMb(target.gatewayPid);
  const url = `${target.apiUrl}/${target.orgSlug}/${job.pipelineSlug}/builds/${job.number}/live?logs=${job.jobId}:0`;
  const opening = performance.now();
  const pages = Array.from({ length: settings.pages }, (_, i) =>
    openPage(url, readers[Math.floor(i / PAGES_PER_PERSON)] as string),
  );
  // A page whose stream fails is reported at the end (after the others are measured and closed).
  const failure = Promise.all(pages.map((p) => p.done)).then(
    () => undefined,
    (err: unknown) => err,
  );
  await until("every page's stream to start", () => pages.every((p) => p.ready), 60_000);
  const openMs = performance.now() - opening;
  // Each page reads what is stored of the log once it has its build (at most a few ms each); the lines are timed
  // once those reads are over, so that the row measures the fan-out, not 200 pages opening at the same moment.
  await sleep(OPEN_SETTLE_MS);
  const open = rssMb(target.gatewayPid);

  // As buildkite-agent does, the agent says it is alive while it runs the job (a long run would find it lost).
  const heartbeat = setInterval(() => {
    agentCall(target, "POST", "/v3/heartbeat", job.agentSecret, { sent_at: new Date().toISOString() }).catch(
      (err: unknown) => say(`  heartbeat failed: ${String(err)}`),
    );
  }, HEARTBEAT_MS);
  // The agent uploads chunks of numbered lines; a line's clock starts when its chunk's upload starts.
  const sentAt = new Map<number, number>();
  /** The gateway's memory at each quarter of the upload. */
  const during: number[] = [];
  let offset = 0;
  let n = 0;
  for (let c = 1; c <= settings.chunks; c++) {
    const lines: string[] = [];
    const first = n;
    for (let i = 0; i < settings.linesPerChunk; i++) lines.push(`bench line ${n++} ${"x".repeat(80)}\n`);
    const bytes = Buffer.from(lines.join(""));
    const started = performance.now();
    for (let i = first; i < n; i++) sentAt.set(i, started);
    const res = await fetch(
      `${target.agentUrl.replace(/\/v3\/?$/, "")}/v3/jobs/${job.jobId}/chunks?sequence=${c}&offset=${offset}&size=${bytes.length}`,
      {
        method: "POST",
        headers: { authorization: `Token ${job.jobSecret}`, "content-type": "text/plain", "content-encoding": "gzip" },
        body: gzipSync(bytes),
      },
    );
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`chunk ${c}: ${res.status}`);
    offset += bytes.length;
    if (c % Math.max(1, Math.floor(settings.chunks / 4)) === 0) during.push(rssMb(target.gatewayPid) ?? Number.NaN);
    await sleep(settings.chunkEveryMs);
  }
  await until("every page to have every line", () => pages.every((p) => p.seen.size >= n), 30_000).catch(
    (err: unknown) => say(`  ${String(err)}`),
  );
  await agentCall(target, "PUT", `/v3/jobs/${job.jobId}/finish`, job.jobSecret, { exit_status: "0" }).finally(() =>
    clearInterval(heartbeat),
  );
  await until("every page's stream to end", () => pages.every((p) => p.ended), 30_000).catch((err: unknown) =>
    say(`  ${String(err)}`),
  );
  for (const p of pages) p.abort.abort();
  const failed = await failure;
  if (failed) throw failed;
  await sleep(500);
  const after = rssMb(target.gatewayPid);

  const latencies: number[] = [];
  let missing = 0;
  for (const p of pages) {
    for (let i = 0; i < n; i++) {
      const at = p.seen.get(i);
      if (at === undefined) missing++;
      else latencies.push(at - (sentAt.get(i) ?? at));
    }
  }
  return {
    pages: settings.pages,
    openMs,
    lines: n,
    deliveries: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    missing,
    unfinished: pages.filter((p) => !p.ended).length,
    ...(before !== undefined && open !== undefined && after !== undefined
      ? { gatewayRssMb: { before, open, during, after } }
      : {}),
    logBytes: offset,
  };
}

/** The row of the summary. */
export function printLiveRow(r: LiveBenchResult, say: (line: string) => void): void {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : "–");
  say(
    `\nlive${" ".repeat(30)} ${"count".padStart(9)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)} ${"max ms".padStart(7)}`,
  );
  say(
    `${`live log fan-out, ${r.pages} pages`.padEnd(34)} ${String(r.deliveries).padStart(9)} ${f(r.p50Ms).padStart(7)} ${f(r.p99Ms).padStart(7)} ${f(r.maxMs).padStart(7)}${r.missing ? `   (${r.missing} lines never arrived!)` : ""}${r.unfinished ? `   (${r.unfinished} streams did not end!)` : ""}`,
  );
  say(`${r.pages} pages opened in ${r.openMs.toFixed(0)} ms (each reads its build and what is stored of the log)`);
  const m = r.gatewayRssMb;
  if (m)
    say(
      `gateway memory (MiB): ${m.before.toFixed(0)} before, ${m.open.toFixed(0)} with the pages open, ${m.during.map((x) => x.toFixed(0)).join(" / ")} at each quarter of ${(r.logBytes / 1024).toFixed(0)} KiB of log to each page, ${m.after.toFixed(0)} after`,
    );
}
