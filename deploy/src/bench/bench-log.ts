/**
 * The `largest log` row of `npm run bench` (docs/limits.md#per-job): a job's log as large as the limit allows
 * (BENCH_LOG_MIB, 256 MiB by default, in 1 MiB chunks through the agent API as buildkite-agent uploads them), then
 * read back slowly as `log.txt` (BENCH_LOG_READ_MIBPS, 8 MiB a second by default: half a minute, far past the 10 s
 * deadline of a call) and at full speed as JSON. Both must hold every byte (sha256 compared); the row reports the
 * read times and the resident memory of the processes a log passes through (the gateway, the builds service and the
 * MongoDB-wire server) before and at their peak while reading, which must not grow with the log.
 */
import { createHash } from "node:crypto";
import { request } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";
import { type Env, envValue } from "../host/paths.js";
import { type AgentApiTarget, agentCall, rssMb, runningJob } from "./bench-agent-api.js";

export const MIB = 1024 * 1024;

export interface LogBenchResult {
  bytes: number;
  uploadMs: number;
  slow: { ms: number; bytes: number; sameSha256: boolean; status: number };
  json: { ms: number; bytes: number; sameSha256: boolean; status: number };
  /** Resident memory (MiB) of each process watched: before the reads, and the highest while reading. */
  memory: Record<string, { before: number; peak: number }>;
}

/** BENCH_LOG_MIB (256) and BENCH_LOG_READ_MIBPS (8). */
export function logBenchSettings(env: Env) {
  const int = (name: string, fallback: number) => {
    const value = Number(envValue(env, name) ?? fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return { mib: int("BENCH_LOG_MIB", 256), readMibPerSecond: int("BENCH_LOG_READ_MIBPS", 8) };
}

/** One MiB of log lines, different in every chunk (ANSI colours included, as test output has them). */
export function piece(n: number): Buffer {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < MIB; i++) {
    const line = `chunk ${n} line ${i} \u001b[32mok\u001b[0m ${"x".repeat(60)}\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join("")).subarray(0, MIB);
}

/** Reads `url` at about `bytesPerSecond`, hashing what comes; `onTick` runs every quarter second meanwhile. */
function readAt(url: string, token: string, bytesPerSecond: number, onTick: () => void) {
  return new Promise<{ status: number; sha256: string; bytes: number; ms: number }>((resolve, reject) => {
    const started = performance.now();
    const tick = setInterval(onTick, 250);
    const req = request(
      url,
      { headers: { authorization: `Bearer ${token}`, "accept-encoding": "identity" } },
      (res) => {
        const hash = createHash("sha256");
        let bytes = 0;
        res.on("data", (data: Buffer) => {
          hash.update(data);
          bytes += data.length;
          // Ahead of the pace: pause until the pace catches up.
          const ahead = (bytes / bytesPerSecond) * 1000 - (performance.now() - started);
          if (ahead > 20) {
            res.pause();
            setTimeout(() => res.resume(), ahead);
          }
        });
        res.on("end", () => {
          clearInterval(tick);
          resolve({ status: res.statusCode ?? 0, sha256: hash.digest("hex"), bytes, ms: performance.now() - started });
        });
        res.on("error", (err) => {
          clearInterval(tick);
          reject(err);
        });
      },
    );
    req.on("error", (err) => {
      clearInterval(tick);
      reject(err);
    });
    req.end();
  });
}

/**
 * Uploads `mib` MiB of log lines to a running job as buildkite-agent does (1 MiB gzipped chunks, heartbeats every
 * 5 s); `onMib` is told each MiB uploaded. Answers the bytes, the time and their sha256.
 */
export async function uploadLog(
  target: AgentApiTarget,
  job: { jobId: string; jobSecret: string; agentSecret: string },
  mib: number,
  onMib: (uploaded: number) => void = () => {},
) {
  const base = target.agentUrl.replace(/\/v3\/?$/, "");
  const expected = createHash("sha256");
  let size = 0;
  const started = performance.now();
  let lastHeartbeat = Date.now();
  for (let n = 0; n < mib; n++) {
    const bytes = piece(n);
    const res = await fetch(`${base}/v3/jobs/${job.jobId}/chunks?sequence=${n + 1}&offset=${size}&size=${MIB}`, {
      method: "POST",
      headers: { authorization: `Token ${job.jobSecret}`, "content-type": "text/plain", "content-encoding": "gzip" },
      body: gzipSync(bytes),
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`log chunk ${n + 1}: ${res.status} ${text}`);
    expected.update(bytes);
    size += bytes.length;
    if (Date.now() - lastHeartbeat > 5_000) {
      lastHeartbeat = Date.now();
      await agentCall(target, "POST", "/v3/heartbeat", job.agentSecret, { sent_at: new Date().toISOString() });
    }
    onMib(n + 1);
  }
  return { bytes: size, uploadMs: performance.now() - started, sha256: expected.digest("hex") };
}

/** Runs the row on `target`; `pids` names the processes whose memory is watched. */
export async function runLogBench(
  target: AgentApiTarget,
  pids: Record<string, number | undefined>,
  env: Env,
  say: (line: string) => void,
): Promise<LogBenchResult> {
  const settings = logBenchSettings(env);
  const job = await runningJob(target);
  const {
    bytes: size,
    uploadMs,
    sha256,
  } = await uploadLog(target, job, settings.mib, (n) => {
    if (n % 32 === 0) say(`largest log: ${n} of ${settings.mib} MiB uploaded`);
  });
  await agentCall(target, "PUT", `/v3/jobs/${job.jobId}/finish`, job.jobSecret, { exit_status: "0" });
  await sleep(1_000);

  const memory: Record<string, { before: number; peak: number }> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const before = rssMb(pid);
    if (before !== undefined) memory[name] = { before, peak: before };
  }
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) {
      const now = rssMb(pid);
      const m = memory[name];
      if (now !== undefined && m) m.peak = Math.max(m.peak, now);
    }
  };
  const logPath = `${target.apiUrl}/v2/organizations/${target.orgSlug}/pipelines/${job.pipelineSlug}/builds/${job.number}/jobs/${job.jobId}/log`;
  say(`largest log: reading ${settings.mib} MiB as log.txt at ${settings.readMibPerSecond} MiB/s…`);
  const slow = await readAt(`${logPath}.txt`, target.apiToken, settings.readMibPerSecond * MIB, sample);
  say("largest log: reading it as JSON at full speed…");
  const tick = setInterval(sample, 250);
  const jsonStarted = performance.now();
  const res = await fetch(logPath, { headers: { authorization: `Bearer ${target.apiToken}` } });
  const body = await res.text();
  const jsonMs = performance.now() - jsonStarted;
  clearInterval(tick);
  sample();
  let content = "";
  try {
    content = String((JSON.parse(body) as { content?: unknown }).content ?? "");
  } catch {
    // Not whole JSON: the check below fails.
  }
  return {
    bytes: size,
    uploadMs,
    slow: { ms: slow.ms, bytes: slow.bytes, sameSha256: slow.sha256 === sha256, status: slow.status },
    json: {
      ms: jsonMs,
      bytes: Buffer.byteLength(content),
      sameSha256: createHash("sha256").update(content).digest("hex") === sha256,
      status: res.status,
    },
    memory,
  };
}

/** Whether every byte came back both ways. */
export const logWhole = (r: LogBenchResult) =>
  r.slow.status === 200 && r.slow.sameSha256 && r.json.status === 200 && r.json.sameSha256;

/** The row of the summary. */
export function printLogRow(r: LogBenchResult, say: (line: string) => void): void {
  const mib = (r.bytes / MIB).toFixed(0);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const check = (x: { bytes: number; sameSha256: boolean; status: number }) =>
    x.status === 200 && x.sameSha256 ? "every byte, sha256 equal" : `${x.status}, ${x.bytes} bytes, sha256 DIFFERS!`;
  say(`\nlargest log (${mib} MiB, uploaded in ${s(r.uploadMs)} as 1 MiB chunks)`);
  say(`log.txt read slowly: ${s(r.slow.ms)}, ${check(r.slow)}`);
  say(`JSON read at full speed: ${s(r.json.ms)}, ${check(r.json)}`);
  const rows = Object.entries(r.memory).map(
    ([name, m]) => `${name} ${m.before.toFixed(0)} → ${m.peak.toFixed(0)} (+${(m.peak - m.before).toFixed(0)})`,
  );
  if (rows.length > 0) say(`memory while reading (MiB, before → peak): ${rows.join(", ")}`);
}
