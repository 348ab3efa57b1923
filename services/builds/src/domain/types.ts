/**
 * The builds domain's vocabulary. Build and job states are the REST values (docs/compatibility.md#build-states,
 * #job-states). Everything in this folder is pure: no I/O, no clocks except timestamps passed in.
 */

export { BUILD_STATES, type BuildState, FINISHED_BUILD_STATES, JOB_STATES, type JobState } from "@conveyor/ci-rules";

import type { BuildState, JobState } from "@conveyor/ci-rules";

export type JobType = "script" | "waiter" | "manual" | "trigger";

/** Why a job will never run because of the build's own definition. */
export type BrokenReason = "branch_mismatch" | "conditional_failed" | "skipped_step";

/**
 * One job of a build, as the domain functions see it. A step with `parallelism: N` yields N jobs sharing a
 * `stepPosition`. Dependencies are by job id and are fixed when the jobs are created.
 */
export interface JobModel {
  id: string;
  type: JobType;
  /**
   * Where the job's step stands in its build's order of steps (the proto Job's step_position): the step's index when
   * the build is created; steps a pipeline upload adds sit between the uploader's and the next (fractions).
   */
  stepPosition: number;
  stepKey: string | null;
  state: JobState;
  /** Job ids that must finish before this job may be scheduled. */
  dependsOn: string[];
  /** Dependencies whose failure does not block this job (depends_on with allow_failure, or allow_dependency_failure). */
  allowDependencyFailure: boolean;
  /**
   * Ids of the dependencies whose failure alone is allowed (`depends_on: [{step, allow_failure: true}]`), when
   * `allowDependencyFailure` is false. Absent means none.
   */
  allowFailureOf?: string[];
  /** For waiters: `continue_on_failure`. */
  continueOnFailure: boolean;
  /** For manual (block/input) jobs: the build state shown while it waits here. */
  blockedState: "passed" | "failed" | "running" | null;
  /** Input steps do not block the build. */
  isInput: boolean;
  /** Soft-failing exit statuses: true for any, a list, or null (no soft fail). */
  softFail: true | Array<number | "*"> | null;
  exitStatus: number | null;
  softFailed: boolean;
  brokenReason: BrokenReason | null;
  /** True once a newer attempt replaced this one; a retried job no longer counts for its build. */
  retried: boolean;
  /** The attempt that replaced this one: the jobs that depended on this one wait for that one instead. */
  retriedInJobId?: string | null;
  /**
   * The failing exit status a running job promised (`buildkite-agent job promise-failure`, promised-failure.ts): its
   * build fails from then on, and the job finishes with at least it. Absent or null when none.
   */
  promisedExitStatus?: number | null;
  /** A concurrency group's limit and name: a job of a group waits `limited` for a slot instead of `scheduled`. */
  concurrency?: number | null;
  concurrencyGroup?: string | null;
}

/** Inputs of conditionals (`if:`) and branch filters, from the build being created. */
export type { BuildContext } from "@conveyor/ci-rules";

/** The outcome of deriving a build's state from its jobs. */
export interface DerivedBuildState {
  state: BuildState;
  /** True while the build waits at a block step; `state` then shows the step's blocked_state. */
  blocked: boolean;
  /** True when nothing more will happen (finished_at should be set). */
  finished: boolean;
}
