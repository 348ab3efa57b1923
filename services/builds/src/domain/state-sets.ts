/**
 * Every named set of build and job states the builds service decides by, each for what it means, in one place. The
 * sets the gateway and the agents share (which states an agent holds or runs, which are final) come from
 * @conveyor/ci-rules (states.ts); the others are built from them where they can be.
 */
import {
  ACTIVE_JOB_STATES,
  type BuildState,
  FINISHED_JOB_STATES,
  type JobState,
  RUNNING_JOB_STATES,
} from "@conveyor/ci-rules";

export { ACTIVE_JOB_STATES, FINISHED_JOB_STATES, RUNNING_JOB_STATES };

// Job states.

/** States of a job whose agent started it and still runs it: a start it repeats (its answer lost) answers the same. */
export const STARTED_ON_AGENT_STATES: readonly JobState[] = RUNNING_JOB_STATES.filter((s) => s !== "accepted");

/**
 * States of a job that show its build got going: an agent took it (or did, and it finished since), or a block step
 * was unblocked. A build with one is `running` rather than `scheduled` (build-state.ts); waiters do not count.
 */
export const BUILD_STARTED_JOB_STATES: readonly JobState[] = [
  ...ACTIVE_JOB_STATES,
  "passed",
  "failed",
  "timed_out",
  "canceled",
  "expired",
  "unblocked",
];

/** States of work under way or about to be: a build with such a job is not just sitting at a block step. */
export const PROGRESSING_JOB_STATES: readonly JobState[] = ["scheduled", ...ACTIVE_JOB_STATES, "limiting", "limited"];

/**
 * What each of a pipeline's job counters (and each queue's metrics) counts: scheduled = runnable and waiting for an
 * agent; running = on an agent; waiting = waiting on something else. Together they are every unfinished state.
 */
export const COUNTED_JOB_STATES = {
  scheduled: ["scheduled", "assigned"],
  running: RUNNING_JOB_STATES,
  waiting: ["pending", "waiting", "blocked", "limiting", "limited"],
} as const satisfies Record<"scheduled" | "running" | "waiting", readonly JobState[]>;

/** States a job reaches because something before it failed: a retry of that gives it another chance. */
export const STOPPED_BY_FAILURE_STATES: readonly JobState[] = ["waiting_failed", "blocked_failed", "unblocked_failed"];

/** States in which a finished job may be retried by hand (and automatically, except canceled). */
export const RETRYABLE_JOB_STATES: readonly JobState[] = ["failed", "timed_out", "canceled", "expired"];

/** States of jobs a pipeline upload's `replace` removes: no agent has taken them and no person acted on them. */
export const REPLACEABLE_JOB_STATES: readonly JobState[] = [
  "pending",
  "waiting",
  "blocked",
  "scheduled",
  "limiting",
  "limited",
];

/** States of the jobs a superseded build that has not started yet drops (skipped with it). */
export const SKIPPED_WITH_BUILD_STATES: readonly JobState[] = [
  "pending",
  "waiting",
  "scheduled",
  "assigned",
  "blocked",
  "limited",
];

/** States of a concurrency group's job that holds one of its slots: handed to agents, or running. */
export const SLOT_HOLDING_STATES: readonly JobState[] = ["scheduled", ...ACTIVE_JOB_STATES];

/** States of a concurrency group's job that has not started yet. */
export const GROUP_WAITING_STATES: readonly JobState[] = ["pending", "waiting", "limiting", "limited"];

/** States of a command job no agent has taken yet, whose dispatch priority may still change (REST's reprioritize). */
export const REPRIORITIZABLE_JOB_STATES: readonly JobState[] = [...GROUP_WAITING_STATES, "scheduled"];

// Build states.

/** States in which a build may be canceled on request (a build waiting at a block step may be too). */
export const CANCELABLE_BUILD_STATES: readonly BuildState[] = ["scheduled", "running", "failing"];

/** States of a build being canceled or canceled: nothing in it may be unblocked any more. */
export const CANCELED_BUILD_STATES: readonly BuildState[] = ["canceling", "canceled"];

/** States a pipeline's running-builds counter counts. */
export const RUNNING_BUILD_STATES: readonly BuildState[] = ["running", "failing", "canceling"];

/** What "finished" stands for in a list's state filter (the REST shortcut). */
export const FINISHED_FILTER_STATES: readonly BuildState[] = ["passed", "failed", "blocked", "canceled"];

/**
 * States of an unfinished build a newer build of its branch may skip or cancel: `passed` is there because a build
 * waiting at a block step shows its blocked_state (passed by default) while it is not finished.
 */
export const SUPERSEDABLE_BUILD_STATES: readonly BuildState[] = [
  "scheduled",
  "running",
  "failing",
  "blocked",
  "passed",
];
