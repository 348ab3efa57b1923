import { notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Build } from "../domain/build.js";
import { cancelOnFailingPlan } from "../domain/cancel-on-failing.js";
import type { Job } from "../domain/job.js";
import { cancelChanges, stampsFor } from "../domain/job-stamps.js";
import { advance, cancelPlan, deriveBuildState } from "../domain/state-machine.js";
import { RUNNING_JOB_STATES } from "../domain/state-sets.js";

/** A build with its jobs, as they are after a change. */
export interface BuildWithJobs {
  build: Build;
  jobs: Job[];
}

/**
 * Reconciles a build under its lock. `known` is the build and its jobs as the caller just wrote them (every write
 * matched), so that the first pass need not read them again; a lost race reads them as always.
 */
export type Reconcile = (buildId: string, known?: BuildWithJobs) => Promise<BuildWithJobs>;

/** How much one reconcile does. */
export interface ReconcileSettings {
  /**
   * The most job writes of a cancel in one pass (a few hundred cost about a second on the bundled FerretDB): a larger
   * build's cancel answers at once as `canceling` and the rest follows in batches (docs/limits.md#per-build).
   */
  cancelBatch: number;
}

export const DEFAULT_RECONCILE_SETTINGS: ReconcileSettings = { cancelBatch: 400 };

/**
 * Brings a build in line with its jobs: schedules jobs whose dependencies finished, stops the jobs of
 * `cancel_on_build_failing` steps once the build is failing, then derives the build's state. Every write is conditioned on what was read (job state, build version); on a lost race it reads again.
 * Callers hold the build's lock.
 */
export function createReconcile(
  ctx: BuildsContext,
  hooks: {
    /**
     * Finishes what a crash left half done (a retry whose old attempt is not marked, an unblock whose fields are not
     * stored); true when it changed anything, and the reconcile then reads the build again.
     */
    finishInterrupted?(jobs: readonly Job[]): Promise<boolean>;
    /** Told of the build and its jobs after every reconcile; must not wait for anything (the lock is held). */
    settled?(build: Build, jobs: readonly Job[]): void;
    /**
     * Told when a cancel's job writes did not all fit in one pass (`cancelBatch`): the rest is to be reconciled later,
     * outside this lock (lifecycle/cancel-continuation.ts). Must not wait for anything.
     */
    cancelLeft?(buildId: string, known: BuildWithJobs): void;
  } = {},
  settings: ReconcileSettings = DEFAULT_RECONCILE_SETTINGS,
): Reconcile {
  const { repo, now } = ctx;

  /** Cancels (or sets canceling) what cancelOnFailingPlan names; true when it changed anything. */
  const stopOnFailing = async (build: Build, jobs: readonly Job[], at: Date): Promise<boolean> => {
    const plan = cancelOnFailingPlan(jobs);
    if (plan.cancel.length + plan.canceling.length === 0) return false;
    await ctx.markCounts(build.pipelineId);
    const changes = cancelChanges(jobs, plan, at);
    await ctx.stateEvents.changeJobs(changes);
    return changes.length > 0;
  };

  /**
   * Derives the build's state from `jobs` and stores it when it changed (compare-and-set on its version): the build
   * and jobs after, or null when the write lost a race. `jobsChanged`: this pass wrote jobs (the counters move).
   */
  const settle = async (build: Build, jobs: Job[], at: Date, jobsChanged: boolean): Promise<BuildWithJobs | null> => {
    const derived = deriveBuildState(jobs, { cancelRequested: build.cancelRequested });
    const startedAt = build.startedAt ?? earliest(jobs.map((j) => j.startedAt));
    const finishedAt = derived.finished ? (build.finishedAt ?? at) : null;
    if (
      derived.state === build.state &&
      derived.blocked === build.blocked &&
      startedAt?.getTime() === build.startedAt?.getTime() &&
      finishedAt?.getTime() === build.finishedAt?.getTime()
    ) {
      if (jobsChanged) ctx.publishCounts(build.pipelineId);
      hooks.settled?.(build, jobs);
      return { build, jobs };
    }
    await ctx.markCounts(build.pipelineId);
    const updated = await ctx.stateEvents.changeBuild(build, {
      state: derived.state,
      blocked: derived.blocked,
      startedAt,
      finishedAt,
    });
    if (!updated) return null;
    ctx.publishCounts(build.pipelineId);
    hooks.settled?.(updated, jobs);
    return { build: updated, jobs };
  };

  return async (buildId, known) => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      // Read together: a job written after the build was read only makes this pass's derivation later, not wrong (the
      // build's write is a compare-and-set on its version, and every job write is followed by a reconcile of its own).
      const [build, read] =
        attempt === 0 && known
          ? [known.build, known.jobs]
          : await Promise.all([repo.findBuildById(buildId), repo.jobsOf([buildId])]);
      if (!build) throw notFound("build");
      let jobs = read;
      // Work a crash left half done is finished first.
      if (hooks.finishInterrupted && (await hooks.finishInterrupted(jobs))) continue;
      const at = now();
      // A requested cancel's job writes come first (the build's state assumes nothing cancellable is left once a
      // cancel is requested): at most `cancelBatch` of them per pass, jobs on agents first. A larger build's cancel
      // answers `canceling` with the rest left to `cancelLeft`, which reconciles again until none is left; a cancel a
      // crash cut short is finished the same way, at the build's next change or by the sweep.
      let cancelWrote = false;
      if (build.cancelRequested) {
        const changes = cancelChanges(jobs, cancelPlan(jobs), at);
        if (changes.length > 0) {
          cancelWrote = true;
          const batch = onAgentsFirst(changes).slice(0, settings.cancelBatch);
          await ctx.markCounts(build.pipelineId);
          const written = await ctx.stateEvents.changeJobs(batch);
          if (written.some((job) => job === null)) continue;
          jobs = merged(jobs, written as Job[]);
          if (changes.length > batch.length) {
            const result = await settle(build, jobs, at, true);
            if (!result) continue;
            hooks.cancelLeft?.(buildId, result);
            return result;
          }
        }
      }
      const advanced = advance(jobs);
      // A write below changes the pipeline's counters: the outbox notes it first (free while the note stands).
      const byId = new Map(jobs.map((j) => [j.id, j]));
      if (advanced.some((next) => byId.get(next.id)?.state !== next.state)) await ctx.markCounts(build.pipelineId);
      // Their events are recorded in one command; written in runs of one kind, the first run that loses a race ends it.
      const changes = advanced.flatMap((next) => {
        const current = byId.get(next.id);
        return !current || current.state === next.state
          ? []
          : [{ job: current, update: { state: next.state, ...stampsFor(current, next.state, at) } }];
      });
      const written = await ctx.stateEvents.changeJobs(changes, { stopAtMiss: true });
      const changedJobs = written.filter((j): j is Job => j !== null);
      if (changedJobs.length < changes.length) continue;
      // Each written job is known as the write left it: thousands need not be read again.
      jobs = merged(jobs, changedJobs);
      // A failing build stops the jobs of its `cancel_on_build_failing` steps; then it is read again.
      if (await stopOnFailing(build, jobs, at)) continue;

      const result = await settle(build, jobs, at, cancelWrote || changedJobs.length > 0);
      if (result) return result;
    }
    throw new Error(`build ${buildId} kept changing under ${MAX_ATTEMPTS} reconciliations`);
  };
}

function earliest(dates: Array<Date | null>): Date | null {
  const times = dates.filter((d): d is Date => d !== null).map((d) => d.getTime());
  return times.length === 0 ? null : new Date(Math.min(...times));
}

/** `jobs` with those of `written` in their place. */
function merged(jobs: readonly Job[], written: readonly Job[]): Job[] {
  if (written.length === 0) return [...jobs];
  const byId = new Map(written.map((job) => [job.id, job]));
  return jobs.map((job) => byId.get(job.id) ?? job);
}

/** A cancel's job changes with those of jobs on agents (and about to be) first: their agents are told soonest. */
function onAgentsFirst<C extends { job: Job }>(changes: readonly C[]): C[] {
  const first = (c: C) => (AGENT_HELD_STATES.has(c.job.state) ? 0 : 1);
  return [...changes].sort((a, b) => first(a) - first(b));
}

const AGENT_HELD_STATES: ReadonlySet<string> = new Set(["assigned", ...RUNNING_JOB_STATES]);
