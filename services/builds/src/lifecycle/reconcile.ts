import { notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Build } from "../domain/build.js";
import { cancelOnFailingPlan } from "../domain/cancel-on-failing.js";
import type { Job } from "../domain/job.js";
import { cancelChanges, stampsFor } from "../domain/job-stamps.js";
import { advance, cancelPlan, deriveBuildState } from "../domain/state-machine.js";

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
  } = {},
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

  return async (buildId, known) => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const build = attempt === 0 && known ? known.build : await repo.findBuildById(buildId);
      if (!build) throw notFound("build");
      let jobs = attempt === 0 && known ? known.jobs : await repo.jobsOf([buildId]);
      // Work a crash left half done is finished first.
      if (hooks.finishInterrupted && (await hooks.finishInterrupted(jobs))) continue;
      const at = now();
      // A cancel request whose job writes a crash cut short: its jobs are canceled before anything else moves (the
      // build's state assumes nothing cancellable is left once a cancel is requested).
      if (build.cancelRequested) {
        const plan = cancelPlan(jobs);
        if (plan.cancel.length + plan.canceling.length > 0) {
          await ctx.markCounts(build.pipelineId);
          await ctx.stateEvents.changeJobs(cancelChanges(jobs, plan, at));
          continue;
        }
      }
      const advanced = advance(jobs);
      // A write below changes the pipeline's counters: the outbox notes it first (free while the note stands).
      const byId = new Map(jobs.map((j) => [j.id, j]));
      if (advanced.some((next) => byId.get(next.id)?.state !== next.state)) await ctx.markCounts(build.pipelineId);
      // Their events are recorded in one command; the first write that loses a race ends the run.
      const changes = advanced.flatMap((next) => {
        const current = byId.get(next.id);
        return !current || current.state === next.state
          ? []
          : [{ job: current, update: { state: next.state, ...stampsFor(current, next.state, at) } }];
      });
      const written = await ctx.stateEvents.changeJobs(changes, { stopAtMiss: true });
      const changedJobs = written.filter((j): j is Job => j !== null);
      if (changedJobs.length < changes.length) continue;
      if (changedJobs.length > 0) jobs = await repo.jobsOf([buildId]);
      // A failing build stops the jobs of its `cancel_on_build_failing` steps; then it is read again.
      if (await stopOnFailing(build, jobs, at)) continue;

      const derived = deriveBuildState(jobs, { cancelRequested: build.cancelRequested });
      const startedAt = build.startedAt ?? earliest(jobs.map((j) => j.startedAt));
      const finishedAt = derived.finished ? (build.finishedAt ?? at) : null;
      if (
        derived.state === build.state &&
        derived.blocked === build.blocked &&
        startedAt?.getTime() === build.startedAt?.getTime() &&
        finishedAt?.getTime() === build.finishedAt?.getTime()
      ) {
        if (changedJobs.length > 0) ctx.publishCounts(build.pipelineId);
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
      if (!updated) continue;
      ctx.publishCounts(build.pipelineId);
      hooks.settled?.(updated, jobs);
      return { build: updated, jobs };
    }
    throw new Error(`build ${buildId} kept changing under ${MAX_ATTEMPTS} reconciliations`);
  };
}

function earliest(dates: Array<Date | null>): Date | null {
  const times = dates.filter((d): d is Date => d !== null).map((d) => d.getTime());
  return times.length === 0 ? null : new Date(Math.min(...times));
}
