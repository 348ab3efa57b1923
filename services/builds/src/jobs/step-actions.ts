import { failedPrecondition, invalidFields, notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import { type Job, jobOrder } from "../domain/job.js";
import { isFinishedJobState } from "../domain/state-machine.js";
import { jobsOfStep, MAX_STEP_LABEL, rememberUpdate, updatedLabel } from "../domain/steps.js";
import { type JobTransitions, movedOn } from "./job-transitions.js";
import { requireRunningJob } from "./running-job.js";

/** A step named by a running job of its build: the caller's job and the step's id or key. */
export interface StepRef {
  jobId: string;
  step: string;
}

/**
 * What a running job's agent does to the steps of its build (`buildkite-agent step get/update/cancel`,
 * docs/compatibility.md#steps-from-inside-a-job): the caller's job must be running (a finished job reaches nothing,
 * docs/security.md), and the step must be of its build.
 */
export function createStepActions(ctx: BuildsContext, transitions: JobTransitions) {
  const { repo, withLock } = ctx;

  /** The step's jobs, in order, after checking the caller. */
  const find = async (ref: StepRef): Promise<{ caller: Job; jobs: Job[] }> => {
    const caller = await requireRunningJob(repo, ref.jobId);
    const jobs = jobsOfStep(await repo.jobsOf([caller.buildId]), ref.step).sort(jobOrder);
    if (jobs.length === 0) throw notFound("step");
    return { caller, jobs };
  };

  return {
    get: async (ref: StepRef): Promise<Job[]> => (await find(ref)).jobs,

    /** Sets (or appends to) the label of every job of the step, once per idempotency uuid. */
    async updateLabel(ref: StepRef, value: string, opts: { append: boolean; uuid: string }): Promise<Job[]> {
      const { caller } = await find(ref);
      return withLock(caller.buildId, async () => {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const jobs = jobsOfStep(await repo.jobsOf([caller.buildId]), ref.step).sort(jobOrder);
          if (jobs.length === 0) throw notFound("step");
          let raced = false;
          for (const job of jobs) {
            if (opts.uuid !== "" && job.stepUpdateIds.includes(opts.uuid)) continue;
            const label = updatedLabel(job.label, value, opts.append);
            if (label === undefined)
              throw invalidFields([{ field: "value", code: `would make a label longer than ${MAX_STEP_LABEL}` }]);
            const updated = await repo.updateJob(job.id, job.state, {
              name: label,
              label,
              stepUpdateIds: rememberUpdate(job.stepUpdateIds, opts.uuid),
            });
            if (!updated) raced = true;
          }
          if (!raced) return jobsOfStep(await repo.jobsOf([caller.buildId]), ref.step).sort(jobOrder);
        }
        throw failedPrecondition("The step kept changing; try again");
      });
    },

    /** Cancels the step's unfinished jobs: those waiting at once, those on agents through canceling. */
    async cancel(ref: StepRef): Promise<Job[]> {
      const { caller, jobs } = await find(ref);
      for (const job of jobs) {
        if (job.retried || isFinishedJobState(job.state)) continue;
        try {
          await transitions.apply(job.id, { type: "cancel" });
        } catch (err) {
          // A job that finished or went meanwhile needs no cancel.
          if (!movedOn(err)) throw err;
        }
      }
      return jobsOfStep(await repo.jobsOf([caller.buildId]), ref.step).sort(jobOrder);
    },
  };
}

export type StepActions = ReturnType<typeof createStepActions>;
