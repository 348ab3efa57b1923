/**
 * Pipeline uploads (docs/compatibility.md#pipeline-upload): a running job adds steps to its build. The new
 * steps go right after the uploading step; jobs that waited for the uploader wait for the new jobs too; `replace`
 * drops the jobs that have not started. Pure: the plan is what the service stores, then applies.
 */
import { type BuildContext, type PipelineStep, STEP_LIMITS } from "@conveyor/ci-rules";
import type { Job, PlannedJob } from "./job.js";
import { planSteps } from "./jobs-from-steps.js";
import { REPLACEABLE_JOB_STATES } from "./state-sets.js";
import type { JobState } from "./types.js";

/** Bounds of one upload and of a build. */
export const UPLOAD_LIMITS = {
  /** Steps one upload may add (groups count their steps): as many as a pipeline's definition may hold. */
  maxSteps: STEP_LIMITS.maxSteps,
  /** Jobs one upload may add (parallelism multiplies). */
  maxJobs: 2000,
  /** Jobs a build may hold, every attempt included. */
  maxBuildJobs: STEP_LIMITS.maxBuildJobs,
} as const;

/** What an upload changes in its build. */
export interface UploadPlan {
  /** The new jobs, placed after the uploader. */
  jobs: PlannedJob[];
  /** Jobs that waited for the uploader, with the new jobs added to what they wait for. */
  waitFor: Array<{ id: string; state: JobState; dependsOn: string[] }>;
  /** Jobs `replace` drops, with the state they must still be in. */
  remove: Array<{ id: string; state: JobState }>;
  /** New positions of existing jobs, when the gap after the uploader was too narrow for the new steps. */
  renumber: Array<{ id: string; stepPosition: number }>;
}

export interface UploadInput {
  uploader: Job;
  /** Every job of the build. */
  jobs: readonly Job[];
  steps: readonly PipelineStep[];
  /** The upload's top-level `env`, under each new command step's own. */
  env: Record<string, string>;
  context: BuildContext;
  timeouts: { default: number | null; maximum: number | null };
  replace: boolean;
  newId: () => string;
}

/** Keys (step and group) of a build's jobs → their ids, for the new steps' `depends_on`. */
export function keysOf(jobs: readonly Job[]): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  const add = (key: string | undefined | null, id: string) => {
    if (key) keys.set(key, [...(keys.get(key) ?? []), id]);
  };
  for (const job of jobs) {
    if (job.retrySource) continue; // an attempt stands in for its first job, which is already listed
    add(job.stepKey, job.id);
    add(job.step.group?.key, job.id);
  }
  return keys;
}

/** The plan of an upload, or why it cannot be applied. */
export function planUpload(input: UploadInput): { ok: true; plan: UploadPlan } | { ok: false; problem: string } {
  const { uploader, steps } = input;
  if (steps.length > UPLOAD_LIMITS.maxSteps)
    return {
      ok: false,
      problem: `An upload may add at most ${UPLOAD_LIMITS.maxSteps} steps; this one has ${steps.length}`,
    };
  const remove = input.replace
    ? input.jobs.filter((j) => j.id !== uploader.id && !j.retried && REPLACEABLE_JOB_STATES.includes(j.state))
    : [];
  const removed = new Set(remove.map((j) => j.id));
  const kept = input.jobs.filter((j) => !removed.has(j.id));
  const planned = planSteps(steps, input.context, {
    newId: input.newId,
    timeouts: input.timeouts,
    existingKeys: keysOf(kept),
    after: placeOf(uploader, kept),
  });
  if (planned.length > UPLOAD_LIMITS.maxJobs)
    return {
      ok: false,
      problem: `An upload may add at most ${UPLOAD_LIMITS.maxJobs} jobs; this one makes ${planned.length}`,
    };
  if (kept.length + planned.length > UPLOAD_LIMITS.maxBuildJobs)
    return {
      ok: false,
      problem: `A build may hold at most ${UPLOAD_LIMITS.maxBuildJobs} jobs; this upload would make ${kept.length + planned.length}`,
    };

  const { positions, renumber } = placeAfter(uploader, kept, steps.length);
  const jobs = planned.map((job) => ({
    ...job,
    stepPosition: positions(job.stepPosition),
    env: job.type === "script" ? { ...input.env, ...job.env } : job.env,
  }));
  const newIds = jobs.map((j) => j.id);
  const uploaderIds = attemptChain(uploader, input.jobs);
  const waitFor = kept
    .filter(
      (j) =>
        !j.retried && (j.state === "pending" || j.state === "waiting") && j.dependsOn.some((id) => uploaderIds.has(id)),
    )
    .map((j) => ({ id: j.id, state: j.state, dependsOn: [...new Set([...j.dependsOn, ...newIds])] }));
  return {
    ok: true,
    plan: { jobs, waitFor, remove: remove.map((j) => ({ id: j.id, state: j.state })), renumber },
  };
}

/** Whether a job is a barrier: a wait or block step that is not omitted (as planJobs counts them). */
const isBarrier = (job: Job) =>
  (job.type === "waiter" || (job.type === "manual" && !job.isInput)) &&
  job.state !== "skipped" &&
  job.state !== "broken";

/**
 * The uploader's place among the build's top-level steps: the last barrier before it, and the jobs since that
 * barrier up to the uploader itself (those running beside it, and the uploader).
 */
function placeOf(uploader: Job, jobs: readonly Job[]): { barrier: string | null; since: string[] } {
  const before = jobs.filter((j) => j.stepPosition < uploader.stepPosition && !j.retrySource && isBarrier(j));
  const barrier = before.reduce<Job | null>(
    (last, j) => (!last || j.stepPosition > last.stepPosition ? j : last),
    null,
  );
  const since = jobs
    .filter(
      (j) =>
        j.stepPosition > (barrier?.stepPosition ?? Number.NEGATIVE_INFINITY) &&
        j.stepPosition <= uploader.stepPosition &&
        !j.retrySource &&
        !isBarrier(j),
    )
    .map((j) => j.id);
  return { barrier: barrier?.id ?? null, since };
}

/** The uploader and the attempts it retries: jobs that depend on any of them depend on the uploader. */
function attemptChain(job: Job, jobs: readonly Job[]): Set<string> {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const ids = new Set([job.id]);
  let source = job.retrySource?.jobId;
  while (source && !ids.has(source)) {
    ids.add(source);
    source = byId.get(source)?.retrySource?.jobId;
  }
  return ids;
}

/** The smallest gap between positions before existing jobs are renumbered. */
const MIN_GAP = 1e-6;

/**
 * Positions for `count` new steps between the uploader and the next step of the build: step i of the upload goes
 * to lo + (hi − lo)·(i + 1)/(count + 1). When the gap is too narrow (many uploads nested in one place), the
 * build's steps are first renumbered 0, 1, 2… in their order.
 */
function placeAfter(
  uploader: Job,
  jobs: readonly Job[],
  count: number,
): { positions: (i: number) => number; renumber: UploadPlan["renumber"] } {
  const after = (lo: number, indexes: number[]) => indexes.find((i) => i > lo) ?? lo + 1;
  const sorted = [...new Set(jobs.map((j) => j.stepPosition))].sort((a, b) => a - b);
  let lo = uploader.stepPosition;
  let hi = after(lo, sorted);
  let renumber: UploadPlan["renumber"] = [];
  if ((hi - lo) / (count + 1) < MIN_GAP) {
    const ordinal = new Map(sorted.map((value, i) => [value, i]));
    renumber = jobs
      .filter((j) => ordinal.get(j.stepPosition) !== j.stepPosition)
      .map((j) => ({ id: j.id, stepPosition: ordinal.get(j.stepPosition) ?? 0 }));
    lo = ordinal.get(uploader.stepPosition) ?? 0;
    hi = lo + 1;
  }
  const step = (hi - lo) / (count + 1);
  return { positions: (i) => lo + step * (i + 1), renumber };
}
