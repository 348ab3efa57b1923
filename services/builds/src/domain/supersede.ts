/**
 * The pipeline's branch rules for a new build (docs/compatibility.md#build-states): "skip queued branch
 * builds" and "cancel intermediate (running) branch builds".
 */
import { matchesBranchFilter } from "@conveyor/ci-rules";
import type { BuildState } from "./types.js";

/** An earlier build that a new one might supersede. */
export interface SupersedeCandidate {
  id: string;
  number: number;
  branch: string;
  state: BuildState;
  blocked: boolean;
}

/** The pipeline's settings: `skip_queued_branch_builds(_filter)`, `cancel_running_branch_builds(_filter)`. */
export interface SupersedeSettings {
  skipQueued: boolean;
  skipQueuedFilter: string | null;
  cancelRunning: boolean;
  cancelRunningFilter: string | null;
}

/** Build ids to mark skipped (not started) and to cancel (started), in candidate order. */
export interface SupersedePlan {
  skip: string[];
  cancel: string[];
}

/**
 * Which earlier builds a new build on `newBuild.branch` supersedes. Only builds on exactly the same branch with a
 * lower number count; the new build itself never does.
 * - With `skipQueued` and the branch matching `skipQueuedFilter` (branch pattern, B6; null or blank = every
 *   branch): builds still `scheduled` (nothing started) and not waiting at a block step are skipped.
 * - With `cancelRunning` and the branch matching `cancelRunningFilter`: builds that are `running` or `failing`,
 *   or blocked at a block step (whatever the blocked_state shown), are canceled. Queued builds are left to the skip
 *   setting, as Buildkite does; `canceling` and finished builds are left alone.
 */
export function buildsToSupersede(
  newBuild: { branch: string; number: number },
  candidates: readonly SupersedeCandidate[],
  pipeline: SupersedeSettings,
): SupersedePlan {
  const skipping = pipeline.skipQueued && matchesBranchFilter(pipeline.skipQueuedFilter, newBuild.branch);
  const canceling = pipeline.cancelRunning && matchesBranchFilter(pipeline.cancelRunningFilter, newBuild.branch);
  const plan: SupersedePlan = { skip: [], cancel: [] };
  for (const build of candidates) {
    if (build.branch !== newBuild.branch || build.number >= newBuild.number) continue;
    if (skipping && build.state === "scheduled" && !build.blocked) plan.skip.push(build.id);
    else if (canceling && isCancelable(build)) plan.cancel.push(build.id);
  }
  return plan;
}

function isCancelable(build: SupersedeCandidate): boolean {
  if (build.blocked) return build.state !== "canceling" && build.state !== "canceled";
  return build.state === "running" || build.state === "failing";
}
