/**
 * Steps as `buildkite-agent step get/update/cancel` see them (docs/compatibility.md#steps-from-inside-a-job): a step
 * is the jobs of a build sharing a step id; its state and outcome are derived from its latest attempts. Pure.
 */
import { isFinishedJobState, isHardFailure } from "./job-states.js";
import { RUNNING_JOB_STATES } from "./state-sets.js";
import type { JobModel } from "./types.js";

/** The longest label a step update may leave (docs/limits.md). */
export const MAX_STEP_LABEL = 1000;
/** How many idempotency uuids of step updates a job remembers. */
export const KEPT_STEP_UPDATE_IDS = 20;

/** Buildkite's step states. */
export type StepState = "ignored" | "waiting_for_dependencies" | "ready" | "running" | "failing" | "finished";
/** Buildkite's step outcomes. */
export type StepOutcome = "neutral" | "passed" | "soft_failed" | "hard_failed" | "errored";

type StepJob = Pick<JobModel, "state" | "softFailed" | "retried" | "stepKey"> & { stepId: string };

/**
 * The jobs of the step a reference names, among a build's jobs: those whose step id is `ref`, else those whose step
 * key is `ref`. Empty when it names none.
 */
export function jobsOfStep<J extends StepJob>(jobs: readonly J[], ref: string): J[] {
  if (ref === "") return [];
  const byId = jobs.filter((j) => j.stepId === ref);
  return byId.length > 0 ? byId : jobs.filter((j) => j.stepKey !== null && j.stepKey === ref);
}

/** The attempts that count: those no retry replaced. */
const latest = <J extends StepJob>(jobs: readonly J[]) => jobs.filter((j) => !j.retried);

/**
 * A step's state from its jobs: `ignored` when none will run (broken or skipped), `finished` when all finished,
 * `running` while one is on an agent (`failing` once another failed hard), `ready` while one waits for an agent,
 * else `waiting_for_dependencies`.
 */
export function stepState(jobs: readonly StepJob[]): StepState {
  const current = latest(jobs);
  if (current.length === 0 || current.every((j) => j.state === "broken" || j.state === "skipped")) return "ignored";
  if (current.every((j) => isFinishedJobState(j.state))) return "finished";
  if (current.some((j) => RUNNING_JOB_STATES.includes(j.state)))
    return current.some(isHardFailure) ? "failing" : "running";
  if (current.some(isHardFailure)) return "failing";
  if (current.some((j) => j.state === "scheduled" || j.state === "assigned")) return "ready";
  return "waiting_for_dependencies";
}

/**
 * A step's outcome: `neutral` until it finished (or when nothing ran), `hard_failed` when a job failed hard,
 * `soft_failed` when one soft-failed, else `passed`.
 */
export function stepOutcome(jobs: readonly StepJob[]): StepOutcome {
  const current = latest(jobs);
  const state = stepState(jobs);
  if (state === "ignored") return "neutral";
  if (current.some(isHardFailure)) return "hard_failed";
  if (state !== "finished") return "neutral";
  if (current.some((j) => j.softFailed)) return "soft_failed";
  return "passed";
}

/** A label after an update: `value`, or the label with `value` added; undefined when it would be too long. */
export function updatedLabel(current: string, value: string, append: boolean): string | undefined {
  const label = append ? current + value : value;
  return [...label].length > MAX_STEP_LABEL ? undefined : label;
}

/** The idempotency uuids a job keeps after an update with `uuid`: the latest KEPT_STEP_UPDATE_IDS. */
export function rememberUpdate(ids: readonly string[], uuid: string): string[] {
  if (uuid === "") return [...ids];
  return [...ids.filter((id) => id !== uuid), uuid].slice(-KEPT_STEP_UPDATE_IDS);
}
