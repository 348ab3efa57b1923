import type { JobDoc, JobUpdate } from "./build-repository.js";
import { isFinishedJobState } from "./domain/state-machine.js";
import type { JobModel, JobState } from "./domain/types.js";

/** The domain's view of a stored job. */
export function toJobModel(j: JobDoc): JobModel {
  return {
    id: j._id,
    type: j.type,
    stepIndex: j.stepIndex,
    stepKey: j.stepKey,
    state: j.state,
    dependsOn: j.dependsOn,
    allowDependencyFailure: j.allowDependencyFailure,
    allowFailureOf: j.allowFailureOf,
    continueOnFailure: j.continueOnFailure,
    blockedState: j.blockedState,
    isInput: j.isInput,
    softFail: JSON.parse(j.softFailJson) as JobModel["softFail"],
    exitStatus: j.exitStatus,
    softFailed: j.softFailed,
    brokenReason: j.brokenReason,
    retried: j.retried,
  };
}

/** The timestamps a job gains when it moves from one state to another. */
export function stampsFor(
  job: Pick<JobDoc, "scheduledAt" | "startedAt" | "finishedAt">,
  next: JobState,
  at: Date,
): JobUpdate {
  const stamps: JobUpdate = {};
  if (next === "scheduled" && !job.scheduledAt) {
    stamps.scheduledAt = at;
    stamps.runnableAt = at;
  }
  if (next === "running" && !job.startedAt) stamps.startedAt = at;
  if (next === "unblocked") stamps.unblockedAt = at;
  if (isFinishedJobState(next) && !job.finishedAt) stamps.finishedAt = at;
  return stamps;
}
