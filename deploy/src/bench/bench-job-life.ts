import { setTimeout as sleep } from "node:timers/promises";
import { gzipSync } from "node:zlib";

/** What the job-life phase needs: the API, a pipeline whose jobs only the simulated agent's queue takes. */
export interface JobLifeTarget {
  apiUrl: string;
  orgSlug: string;
  auth: Record<string, string>;
  pipelineSlug: string;
  /** The cluster's registration token, and the queue the pipeline's step asks for. */
  registration: string;
  queue: string;
  /** Processes whose CPU time to report (name → pid), and how to read it (cpuAll). */
  pids: Record<string, number>;
  cpuAll(pids: Record<string, number>): Record<string, number>;
}

export interface JobLifeResult {
  jobs: number;
  chunksPerJob: number;
  /** CPU milliseconds per job of each process, from assignment to finish. */
  cpuMsPerJob: Record<string, number>;
}

/** The log a simulated job uploads: `chunks` chunks of 20 lines each, as the agent sends them (gzip, with offsets). */
export function jobLogChunks(chunks: number): Array<{ sequence: number; offset: number; size: number; gzip: Buffer }> {
  const out = [];
  let offset = 0;
  for (let i = 0; i < chunks; i++) {
    const text = Buffer.from(
      Array.from({ length: 20 }, (_, line) => `[${i}:${line}] compiling module ${i * 20 + line} … ok\r\n`).join(""),
    );
    out.push({ sequence: i + 1, offset, size: text.length, gzip: gzipSync(text) });
    offset += text.length;
  }
  return out;
}

async function call(url: string, init: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status} ${text.slice(0, 200)}`);
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/**
 * A job's life as the agent lives it, CPU counted (issue 37, "A job's life is cheap"): `jobs` builds of one job are
 * created first and left waiting on a queue no agent serves; then one protocol-level agent of that queue takes them
 * one after the other (ping until one is offered, accept, start, `chunks` log chunks, finish), and each process's CPU
 * time (from /proc) over that span, divided by the jobs, is what one job costs it from assignment to finish, its
 * events and what they set off (the build finishing, counters, notices) included. Idle work of the processes over the
 * span (timers, sweeps) is counted too; it is small beside the jobs'.
 */
export async function runJobLife(target: JobLifeTarget, jobs: number, chunks: number): Promise<JobLifeResult> {
  const { apiUrl } = target;
  for (let i = 0; i < jobs; i++) {
    await call(`${apiUrl}/v2/organizations/${target.orgSlug}/pipelines/${target.pipelineSlug}/builds`, {
      method: "POST",
      headers: target.auth,
      body: JSON.stringify({ commit: "HEAD", branch: "main", message: `job life ${i}` }),
    });
  }
  const registered = await call(`${apiUrl}/v3/register`, {
    method: "POST",
    headers: { authorization: `Token ${target.registration}`, "content-type": "application/json" },
    body: JSON.stringify({ name: `life-${process.pid}`, hostname: "bench", meta_data: [`queue=${target.queue}`] }),
  });
  const agent = { authorization: `Token ${String(registered.body.access_token)}` };
  await call(`${apiUrl}/v3/connect`, { method: "POST", headers: agent });
  // What the creations set off (the builds' first states, their events) is done before counting starts.
  await sleep(2_000);
  const log = jobLogChunks(chunks);
  const before = target.cpuAll(target.pids);
  try {
    for (let done = 0; done < jobs; ) {
      const ping = await call(`${apiUrl}/v3/ping`, { headers: agent });
      const jobId = (ping.body.job as { id?: string } | undefined)?.id;
      if (!jobId) {
        await sleep(100);
        continue;
      }
      const accepted = await call(`${apiUrl}/v3/jobs/${jobId}/accept`, { method: "PUT", headers: agent });
      const job = {
        authorization: `Token ${String(accepted.body.token)}`,
        "content-type": "application/json",
      };
      const now = () => new Date().toISOString();
      await call(`${apiUrl}/v3/jobs/${jobId}/start`, {
        method: "PUT",
        headers: job,
        body: JSON.stringify({ started_at: now() }),
      });
      for (const c of log) {
        await call(`${apiUrl}/v3/jobs/${jobId}/chunks?sequence=${c.sequence}&offset=${c.offset}&size=${c.size}`, {
          method: "POST",
          headers: { authorization: job.authorization, "content-type": "text/plain", "content-encoding": "gzip" },
          body: c.gzip,
        });
      }
      await call(`${apiUrl}/v3/jobs/${jobId}/finish`, {
        method: "PUT",
        headers: job,
        body: JSON.stringify({ exit_status: "0", finished_at: now(), chunks_failed_count: 0 }),
      });
      done++;
    }
    // The last finish's events are handled after its answer.
    await sleep(500);
  } finally {
    // Cleanup only: an error here must not hide the one the loop threw, and an agent left connected is marked lost
    // by the stack's own sweep.
    await fetch(`${apiUrl}/v3/disconnect`, { method: "POST", headers: agent }).catch(() => undefined);
  }
  const after = target.cpuAll(target.pids);
  return {
    jobs,
    chunksPerJob: chunks,
    cpuMsPerJob: Object.fromEntries(
      Object.keys(target.pids).map((name) => [
        name,
        (((after[name] ?? Number.NaN) - (before[name] ?? Number.NaN)) * 1000) / jobs,
      ]),
    ),
  };
}
