/**
 * The `largest build` rows of `npm run bench` (docs/limits.md#per-build): the largest build the limits allow, end to
 * end, beside a one-job build measured in the same run. A build of 4,000 jobs (8 steps of `parallelism: 500`) is
 * created, read for the first time, listed and canceled; a running job uploads 2,000 jobs at once (the most one
 * upload may add) as `buildkite-agent pipeline upload` did before v3.137, then the rest up to 4,000 as the agent
 * does now (`?async=true`, accepted, then polled until applied); that build, with a job running, is then canceled.
 * Every figure is a median of the trials; each must stay well inside the deadline of a call (RPC_TIMEOUT_MS, 10 s).
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { type AgentApiTarget, agentCall, benchCluster, rest, restAnswer, runningJob } from "./bench-agent-api.js";
import { median } from "./bench-stats.js";

/** The documented bounds (docs/limits.md): jobs per build, jobs one upload adds, parallelism of a step. */
const JOBS_PER_BUILD = 4_000;
const JOBS_PER_UPLOAD = 2_000;
const PARALLELISM = 500;

export interface LargestBenchResult {
  trials: number;
  /** Medians in ms of each operation on a one-job build and on the largest one. */
  rows: Array<{ what: string; oneJobMs: number; largestMs: number }>;
  /** Medians in ms of the uploads into a running build, and what the build held after them. */
  upload: {
    oneJobMs: number;
    largestSyncMs: number;
    asyncAcceptedMs: number;
    asyncAppliedMs: number;
    cancelMs: number;
    readMs: number;
  };
  /** Builds that did not hold the jobs they should have (each one is a failure of the bench). */
  wrong: string[];
}

/** A configuration of `steps` command steps of `parallelism` jobs each. */
function parallelSteps(steps: number, parallelism: number, label: string): { steps: unknown[] } {
  return {
    steps: Array.from({ length: steps }, (_, i) => ({
      label: `${label} ${i + 1}`,
      command: "make test",
      ...(parallelism > 1 ? { parallelism } : {}),
    })),
  };
}

const yamlOf = (config: { steps: unknown[] }) =>
  `steps:\n${config.steps
    .map((s) => {
      const step = s as { label: string; command: string; parallelism?: number };
      return `  - label: "${step.label}"\n    command: ${step.command}\n${step.parallelism ? `    parallelism: ${step.parallelism}\n` : ""}`;
    })
    .join("")}`;

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

const jobsOf = (build: Record<string, unknown>) => (Array.isArray(build.jobs) ? build.jobs.length : -1);

/** Runs the rows on `target` (`trials` times each, the one-job and the largest build alternately). */
export async function runLargestBench(
  target: AgentApiTarget,
  trials: number,
  say: (line: string) => void,
): Promise<LargestBenchResult> {
  const wrong: string[] = [];
  const stamp = Date.now();
  // A cluster with no agent: the jobs stay scheduled, as a queue with no agent free leaves them.
  const { clusterId } = await benchCluster(target, `bench-largest-${stamp}`);
  const pipelines = { one: "", largest: "" };
  for (const [side, config] of [
    ["one", parallelSteps(1, 1, "one")],
    ["largest", parallelSteps(JOBS_PER_BUILD / PARALLELISM, PARALLELISM, "shard")],
  ] as const) {
    const pipeline = await rest(target, "POST", "/pipelines", {
      name: `bench ${side} ${stamp}`,
      repository: "git@example.com:bench/largest.git",
      cluster_id: clusterId,
      configuration: yamlOf(config),
    });
    pipelines[side] = String(pipeline.slug);
  }
  const times: Record<string, { one: number[]; largest: number[] }> = {};
  const record = (what: string, side: "one" | "largest", ms: number) => {
    times[what] ??= { one: [], largest: [] };
    times[what][side].push(ms);
  };
  for (let trial = 1; trial <= trials; trial++) {
    for (const side of ["one", "largest"] as const) {
      const builds = `/pipelines/${pipelines[side]}/builds`;
      const expected = side === "one" ? 1 : JOBS_PER_BUILD;
      const created = await restAnswer(target, "POST", builds, {
        commit: "HEAD",
        branch: "main",
        message: `bench ${side}`,
      });
      record("create (POST …/builds)", side, created.ms);
      if (created.status !== 201) {
        wrong.push(`create of a ${expected}-job build answered ${created.status} after ${created.ms.toFixed(0)} ms`);
        continue;
      }
      const number = Number(created.value.number);
      const read = await restAnswer(target, "GET", `${builds}/${number}`);
      record("first read (GET …/builds/{n})", side, read.ms);
      if (jobsOf(read.value) !== expected)
        wrong.push(`${pipelines[side]} #${number} read (${read.status}): ${jobsOf(read.value)} jobs, not ${expected}`);
      const listed = await restAnswer(target, "GET", `${builds}?per_page=30`);
      record("list its pipeline's builds", side, listed.ms);
      if (listed.status !== 200) wrong.push(`the list of ${pipelines[side]}'s builds answered ${listed.status}`);
      const canceled = await restAnswer(target, "PUT", `${builds}/${number}/cancel`);
      record("cancel (PUT …/cancel)", side, canceled.ms);
      if (canceled.value.state !== "canceled" && canceled.value.state !== "canceling")
        wrong.push(
          `${pipelines[side]} #${number}: cancel answered ${canceled.status} after ${canceled.ms.toFixed(0)} ms (${String(canceled.value.state ?? canceled.value.message)})`,
        );
    }
    say(`largest build: trial ${trial} of ${trials}`);
  }

  // Uploads into a running build: one job, 2,000 at once applied before the answer, the rest asynchronously.
  const uploads = { one: [] as number[], sync: [] as number[], accepted: [] as number[], applied: [] as number[] };
  const afterUpload = { cancel: [] as number[], read: [] as number[] };
  for (let trial = 1; trial <= trials; trial++) {
    const job = await runningJob(target);
    const upload = (pipeline: { steps: unknown[] }, asynchronous: boolean) =>
      timed(async () => {
        const uuid = randomUUID();
        await agentCall(
          target,
          "POST",
          `/v3/jobs/${job.jobId}/pipelines${asynchronous ? "?async=true" : ""}`,
          job.jobSecret,
          { uuid, pipeline },
        );
        return uuid;
      });
    uploads.one.push((await upload(parallelSteps(1, 1, "uploaded"), false)).ms);
    uploads.sync.push(
      (
        await upload(parallelSteps(JOBS_PER_UPLOAD / PARALLELISM, PARALLELISM, "sync"), false).catch((err: unknown) => {
          wrong.push(`the 2,000-job upload applied at once failed: ${String(err)}`);
          return { ms: Number.NaN, value: "" };
        })
      ).ms,
    );
    // The build now holds 1 + 1 + 2,000 jobs: the asynchronous upload brings it to the limit.
    const rest_ = JOBS_PER_BUILD - JOBS_PER_UPLOAD - 2;
    const started = performance.now();
    // Steps of at most 500 parallel jobs (the bound of one step), as many as make the rest.
    const asyncSteps = Array.from({ length: Math.ceil(rest_ / PARALLELISM) }, (_, i) => ({
      label: `async ${i + 1}`,
      command: "make test",
      parallelism: Math.min(PARALLELISM, rest_ - i * PARALLELISM),
    }));
    const accepted = await upload({ steps: asyncSteps }, true);
    uploads.accepted.push(accepted.ms);
    for (;;) {
      const status = await agentCall(target, "GET", `/v3/jobs/${job.jobId}/pipelines/${accepted.value}`, job.jobSecret);
      if (status.state === "applied") break;
      if (status.state === "rejected")
        throw new Error(`the asynchronous upload was rejected: ${String(status.message)}`);
      if (performance.now() - started > 120_000) throw new Error("the asynchronous upload was not applied in 120 s");
      await sleep(50);
    }
    uploads.applied.push(performance.now() - started);
    const builds = `/pipelines/${job.pipelineSlug}/builds`;
    const read = await restAnswer(target, "GET", `${builds}/${job.number}`);
    afterUpload.read.push(read.ms);
    if (jobsOf(read.value) !== JOBS_PER_BUILD)
      wrong.push(`${job.pipelineSlug} #${job.number} holds ${jobsOf(read.value)} jobs after its uploads, not 4000`);
    const canceled = await restAnswer(target, "PUT", `${builds}/${job.number}/cancel`);
    afterUpload.cancel.push(canceled.ms);
    if (canceled.status !== 200)
      wrong.push(
        `cancel of the uploaded 4,000-job build answered ${canceled.status} after ${canceled.ms.toFixed(0)} ms`,
      );
    // The agent hears of the cancel and finishes its job, as buildkite-agent does.
    await agentCall(target, "PUT", `/v3/jobs/${job.jobId}/finish`, job.jobSecret, { exit_status: "-1" }).catch(
      () => undefined,
    );
    say(`pipeline uploads: trial ${trial} of ${trials}`);
  }
  return {
    trials,
    rows: Object.entries(times).map(([what, t]) => ({
      what,
      oneJobMs: median(t.one),
      largestMs: median(t.largest),
    })),
    upload: {
      oneJobMs: median(uploads.one),
      largestSyncMs: median(uploads.sync),
      asyncAcceptedMs: median(uploads.accepted),
      asyncAppliedMs: median(uploads.applied),
      cancelMs: median(afterUpload.cancel),
      readMs: median(afterUpload.read),
    },
    wrong,
  };
}

/** The rows of the summary. */
export function printLargestRows(r: LargestBenchResult, deadlineMs: number, say: (line: string) => void): void {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : "–");
  say(
    `\nlargest build (medians of ${r.trials})${" ".repeat(8)} ${"1 job".padStart(9)} ${"4,000 jobs".padStart(11)}  ratio`,
  );
  for (const row of r.rows)
    say(
      `${row.what.padEnd(34)} ${`${f(row.oneJobMs)} ms`.padStart(9)} ${`${f(row.largestMs)} ms`.padStart(11)}  ${f(row.largestMs / row.oneJobMs)}×`,
    );
  const u = r.upload;
  say(
    `${"pipeline upload, applied at once".padEnd(34)} ${`${f(u.oneJobMs)} ms`.padStart(9)} ${`${f(u.largestSyncMs)} ms`.padStart(11)}  ${f(u.largestSyncMs / u.oneJobMs)}× (2,000 jobs)`,
  );
  say(
    `pipeline upload ?async=true of 1,998 jobs: accepted in ${f(u.asyncAcceptedMs)} ms, applied in ${f(u.asyncAppliedMs)} ms`,
  );
  say(
    `the 4,000-job build with a job running: read in ${f(u.readMs)} ms, canceled in ${f(u.cancelMs)} ms (deadline ${deadlineMs} ms)`,
  );
  const slowest = Math.max(...r.rows.map((row) => row.largestMs), u.largestSyncMs, u.asyncAcceptedMs, u.cancelMs);
  say(
    slowest < deadlineMs / 2
      ? `every answer well inside the deadline (the slowest ${f(slowest)} ms, under half of ${deadlineMs} ms)`
      : `an answer took ${f(slowest)} ms, not well inside the ${deadlineMs} ms deadline!`,
  );
  for (const line of r.wrong) say(`wrong: ${line}`);
}
