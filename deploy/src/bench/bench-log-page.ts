/**
 * The `log page` rows of `npm run bench` (issue 32; docs/pages.md#logs): a job's log of BENCH_LOG_PAGE_MIB (20 MiB)
 * read by a signed-in person as the job's page (`…/jobs/{id}/log`, which shows the last 2 MiB) and as the build page
 * with that job open (`…/builds/{n}?job={id}`). Each is read BENCH_LOG_PAGE_READS times, one at a time: the row
 * reports the medians of the first byte of the answer and of the arrival of the log's last line, and the gateway's
 * resident memory before and at its peak while reading. The same is done for a log of 2 MiB (the tail's size, shown
 * whole): the gateway's growth must not follow the log's size.
 */
import { request } from "node:http";
import { type Env, envValue } from "../host/paths.js";
import { agentCall, rssMb, runningJob } from "./bench-agent-api.js";
import type { LiveBenchTarget } from "./bench-live.js";
import { piece, uploadLog } from "./bench-log.js";
import { adminCookie } from "./bench-pages.js";
import { median } from "./bench-stats.js";

/** The tail the pages show (the gateway's TAIL_BYTES, docs/pages.md#logs): the small log is that size. */
const TAIL_MIB = 2;
/** What issue 32 asks of the 20 MB log's page: it answers and shows its tail within this. */
export const LOG_PAGE_TARGET_MS = 1_000;

export interface LogPageTiming {
  /** Median ms to the first byte of the answer. */
  firstByteMs: number;
  /** Median ms until the log's last line had arrived. */
  tailMs: number;
  /** Median bytes of the answer. */
  bytes: number;
  /** Reads that did not answer 200 or whose answer lacked the log's last line. */
  bad: number;
}

export interface LogPageResult {
  /** The log's size in MiB. */
  mib: number;
  jobPage: LogPageTiming;
  buildPage: LogPageTiming;
  /** The gateway's resident memory (MiB) before the reads and at its peak while reading; undefined without its pid. */
  gateway?: { before: number; peak: number };
}

/** BENCH_LOG_PAGE_MIB (20) and BENCH_LOG_PAGE_READS (10). */
export function logPageSettings(env: Env) {
  const int = (name: string, fallback: number) => {
    const value = Number(envValue(env, name) ?? fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return { mib: int("BENCH_LOG_PAGE_MIB", 20), reads: int("BENCH_LOG_PAGE_READS", 10) };
}

/** One read of a page: when its first byte came, when `last` (the log's last line) had come, its status and size. */
function readPage(url: string, cookie: string, last: string) {
  return new Promise<{ status: number; firstByteMs: number; tailMs: number; bytes: number }>((resolve, reject) => {
    const started = performance.now();
    let firstByteMs = Number.NaN;
    let tailMs = Number.NaN;
    const req = request(url, { headers: { cookie, accept: "text/html", "accept-encoding": "identity" } }, (res) => {
      let bytes = 0;
      // The end of what came so far, long enough to hold `last` across two pieces.
      let window = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        if (bytes === 0) firstByteMs = performance.now() - started;
        bytes += Buffer.byteLength(text);
        window = (window + text).slice(-(text.length + last.length));
        if (Number.isNaN(tailMs) && window.includes(last)) tailMs = performance.now() - started;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, firstByteMs, tailMs, bytes }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/**
 * The start of the last whole line of an uploaded log of `mib` MiB, as its page shows it (the text before the line's
 * first colour). The last MiB ends inside a line, so the line before that is the last whole one.
 */
function lastLineText(mib: number): string {
  const lines = piece(mib - 1)
    .toString("utf8")
    .split("\n");
  const line = lines[lines.length - 2] ?? "";
  return line.slice(0, line.indexOf("\u001b"));
}

/** Reads `url` `reads` times, one at a time, and takes the medians. */
async function timePage(url: string, cookie: string, last: string, reads: number): Promise<LogPageTiming> {
  const runs = [];
  for (let i = 0; i < reads; i++) runs.push(await readPage(url, cookie, last));
  const good = runs.filter((r) => r.status === 200 && Number.isFinite(r.tailMs));
  return {
    firstByteMs: median(good.map((r) => r.firstByteMs)),
    tailMs: median(good.map((r) => r.tailMs)),
    bytes: median(good.map((r) => r.bytes)),
    bad: runs.length - good.length,
  };
}

/** A finished job with a log of `mib` MiB, then its two pages read and timed while the gateway's memory is watched. */
async function measureLog(target: LiveBenchTarget, cookie: string, mib: number, reads: number): Promise<LogPageResult> {
  const job = await runningJob(target);
  await uploadLog(target, job, mib);
  await agentCall(target, "PUT", `/v3/jobs/${job.jobId}/finish`, job.jobSecret, { exit_status: "0" });
  const build = `${target.apiUrl}/${target.orgSlug}/${job.pipelineSlug}/builds/${job.number}`;
  const last = lastLineText(mib);
  // A first read of each, not timed: the gateway's code for these pages is warm, as on a running stack.
  await readPage(`${build}/jobs/${job.jobId}/log`, cookie, last);
  await readPage(`${build}?job=${job.jobId}`, cookie, last);
  const before = rssMb(target.gatewayPid);
  let peak = before ?? 0;
  const sample = setInterval(() => {
    peak = Math.max(peak, rssMb(target.gatewayPid) ?? 0);
  }, 20);
  try {
    const jobPage = await timePage(`${build}/jobs/${job.jobId}/log`, cookie, last, reads);
    const buildPage = await timePage(`${build}?job=${job.jobId}`, cookie, last, reads);
    return { mib, jobPage, buildPage, ...(before === undefined ? {} : { gateway: { before, peak } }) };
  } finally {
    clearInterval(sample);
  }
}

/** Runs the rows: a log of the tail's size, then the large one. */
export async function runLogPageBench(
  target: LiveBenchTarget,
  env: Env,
  say: (line: string) => void,
): Promise<LogPageResult[]> {
  const settings = logPageSettings(env);
  const org = (await (
    await fetch(`${target.apiUrl}/v2/organizations/${target.orgSlug}`, {
      headers: { authorization: `Bearer ${target.apiToken}` },
    })
  ).json()) as { id: string };
  const cookie = await adminCookie(target, org.id);
  const results: LogPageResult[] = [];
  for (const mib of [TAIL_MIB, settings.mib]) {
    say(`log page: a log of ${mib} MiB, its pages read ${settings.reads} times each…`);
    results.push(await measureLog(target, cookie, mib, settings.reads));
  }
  return results;
}

/** Whether every read answered with the log's last line. */
export const logPagesWhole = (rs: readonly LogPageResult[]) =>
  rs.every((r) => r.jobPage.bad === 0 && r.buildPage.bad === 0);

/** The rows of the summary, with the target and the growth of the gateway's memory against the log's size. */
export function printLogPageRows(
  rs: readonly LogPageResult[],
  idleRestMs: number | undefined,
  say: (l: string) => void,
) {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : "–");
  const ratio = (ms: number) => (idleRestMs ? `${f(ms / idleRestMs)}×` : "");
  say(
    `\nlog page (medians of single reads)${" ".repeat(4)} ${"first byte".padStart(10)} ${"tail ms".padStart(8)} ${"KB".padStart(6)}  tail vs idle REST read`,
  );
  for (const r of rs) {
    for (const [name, t] of [
      [`…/jobs/{id}/log, ${r.mib} MiB log`, r.jobPage],
      [`…/builds/{n}?job=, ${r.mib} MiB log`, r.buildPage],
    ] as const) {
      const bad = t.bad > 0 ? `   (${t.bad} reads without the tail!)` : "";
      say(
        `${name.padEnd(38)} ${f(t.firstByteMs).padStart(10)} ${f(t.tailMs).padStart(8)} ${f(t.bytes / 1024).padStart(6)}  ${ratio(t.tailMs)}${bad}`,
      );
    }
  }
  const large = rs[rs.length - 1];
  if (large) {
    const worst = Math.max(large.jobPage.tailMs, large.buildPage.tailMs);
    say(
      `${large.mib} MiB log: tail shown in ${f(worst)} ms at worst (target ≤ ${LOG_PAGE_TARGET_MS} ms: ${worst <= LOG_PAGE_TARGET_MS ? "met" : "MISSED"})`,
    );
  }
  // Resident memory rarely shrinks: each log's reads are shown as the growth from just before them to their peak.
  const grown = rs.filter((r) => r.gateway);
  if (grown.length > 0) {
    say(
      `gateway memory while reading (MiB, before → peak): ${grown
        .map((r) => {
          const g = r.gateway as { before: number; peak: number };
          return `${r.mib} MiB log ${g.before.toFixed(0)} → ${g.peak.toFixed(0)} (+${(g.peak - g.before).toFixed(0)})`;
        })
        .join(", ")}`,
    );
  }
}
