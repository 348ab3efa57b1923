/**
 * One job's transitions, with the guards of docs/compatibility.md#job-states, #cancellation-and-timeouts. The caller
 * stores the result with an update conditioned on the state it read, so two racing events cannot both apply.
 */
import type { JobModel, JobState, JobType } from "./types.js";

/**
 * Something that happens to a job. `cancel` is a request (from a build cancel or a person); `canceled` and
 * `timed_out` are the agent confirming it stopped; `timeout` is the server deciding the job ran too long.
 */
export type JobEvent =
  | { type: "assign" }
  | { type: "accept" }
  | { type: "start" }
  | { type: "finish"; exitStatus: number }
  | { type: "cancel" }
  | { type: "canceled" }
  | { type: "timeout" }
  | { type: "timed_out" }
  | { type: "expire" }
  | { type: "unblock" }
  | { type: "skip" }
  | { type: "unassign" };

/** The outcome of applying an event: the changed job, or why the event does not apply. */
export type JobEventResult<T extends JobModel = JobModel> = { ok: true; job: T } | { ok: false; reason: string };

interface Rule {
  /** Past participle for messages: `a job in state "passed" cannot be ${verb}`. */
  verb: string;
  /** Job types the event applies to. */
  types: readonly JobType[];
  /** States it applies in, and the state it leads to (finish decides by exit status, see below). */
  from: Transitions;
  /** Different transitions for trigger jobs, which have no agent. */
  triggerFrom?: Transitions;
}

type Transitions = Partial<Record<JobState, JobState>>;

const AGENT_JOBS: readonly JobType[] = ["script"];
const RUNNING_JOBS: readonly JobType[] = ["script", "trigger"];
const ALL_JOBS: readonly JobType[] = ["script", "trigger", "manual", "waiter"];

const RULES: Record<JobEvent["type"], Rule> = {
  assign: { verb: "assigned to an agent", types: AGENT_JOBS, from: { scheduled: "assigned" } },
  accept: { verb: "accepted", types: AGENT_JOBS, from: { assigned: "accepted" } },
  // A trigger job runs from the moment its child build exists; no agent assigns or accepts it.
  start: { verb: "started", types: RUNNING_JOBS, from: { accepted: "running" }, triggerFrom: { scheduled: "running" } },
  // C6: a finish after a cancel or timeout is that outcome, whatever the exit status.
  finish: {
    verb: "finished",
    types: RUNNING_JOBS,
    from: { running: "passed", canceling: "canceled", timing_out: "timed_out" },
  },
  cancel: {
    verb: "canceled",
    types: ALL_JOBS,
    from: {
      pending: "canceled",
      waiting: "canceled",
      scheduled: "canceled",
      assigned: "canceled",
      blocked: "canceled",
      limiting: "canceled",
      limited: "canceled",
      accepted: "canceling",
      running: "canceling",
    },
    // A trigger job has no agent to stop: it is canceled at once (its child build goes on).
    triggerFrom: {
      pending: "canceled",
      waiting: "canceled",
      scheduled: "canceled",
      limiting: "canceled",
      limited: "canceled",
      running: "canceled",
    },
  },
  canceled: { verb: "confirmed as canceled", types: RUNNING_JOBS, from: { canceling: "canceled" } },
  timeout: { verb: "timed out", types: RUNNING_JOBS, from: { running: "timing_out" } },
  timed_out: { verb: "confirmed as timed out", types: RUNNING_JOBS, from: { timing_out: "timed_out" } },
  expire: { verb: "expired", types: AGENT_JOBS, from: { scheduled: "expired" } },
  unblock: { verb: "unblocked", types: ["manual"], from: { blocked: "unblocked" } },
  skip: {
    verb: "skipped",
    types: ALL_JOBS,
    from: { pending: "skipped", waiting: "skipped", scheduled: "skipped", assigned: "skipped" },
  },
  // The agent it was assigned to never accepted it (it crashed, or the offer was lost): it can go to another.
  unassign: { verb: "unassigned", types: AGENT_JOBS, from: { assigned: "scheduled" } },
};

/**
 * Applies `event` to `job` and returns the changed copy, or a reason such as
 * `a job in state "passed" cannot be accepted (only a job in state "assigned" can)`.
 *
 * - assign: scheduled → assigned; accept: assigned → accepted; start: accepted → running (script jobs only, no
 *   skipping accept), and scheduled → running for trigger jobs, whose "run" is their child build.
 * - finish: running → passed (exit 0) or failed, with `softFailed` when `softFail` covers the exit status (true,
 *   "*" or the status listed); canceling → canceled and timing_out → timed_out whatever the exit status, as C6 says
 *   a finish after a cancel means. The exit status is recorded in every case.
 * - cancel: pending, waiting, scheduled, assigned, blocked, limiting, limited → canceled; accepted, running →
 *   canceling (the agent must stop it); canceled: canceling → canceled.
 * - timeout: running → timing_out; timed_out: timing_out → timed_out; expire: scheduled → expired.
 * - unblock: blocked → unblocked (manual jobs). `unblocked` is final and counts as passed for the jobs behind it;
 *   it is the state Buildkite's REST shows for an unblocked block step. Who unblocked it is the caller's to record.
 * - skip: pending, waiting, scheduled, assigned → skipped (the build was superseded).
 * - unassign: assigned → scheduled (script jobs), when the agent never accepted it; the caller clears the agent.
 */
export function applyJobEvent<T extends JobModel>(job: T, event: JobEvent): JobEventResult<T> {
  const rule = RULES[event.type];
  if (!rule.types.includes(job.type)) {
    return { ok: false, reason: `a ${job.type} job cannot be ${rule.verb}` };
  }
  const from = (job.type === "trigger" ? rule.triggerFrom : undefined) ?? rule.from;
  const next = from[job.state];
  if (next === undefined) {
    return { ok: false, reason: `a job in state "${job.state}" cannot be ${rule.verb} (${allowedStates(from)})` };
  }
  if (event.type !== "finish") return { ok: true, job: { ...job, state: next } };
  if (!Number.isInteger(event.exitStatus)) {
    return { ok: false, reason: `the exit status must be an integer, got ${String(event.exitStatus)}` };
  }
  if (next !== "passed") return { ok: true, job: { ...job, state: next, exitStatus: event.exitStatus } };
  if (event.exitStatus === 0) return { ok: true, job: { ...job, state: "passed", exitStatus: 0, softFailed: false } };
  const softFailed = softFailCovers(job.softFail, event.exitStatus);
  return { ok: true, job: { ...job, state: "failed", exitStatus: event.exitStatus, softFailed } };
}

/** Whether a step's `soft_fail` turns a failure with `exitStatus` into a soft failure. */
export function softFailCovers(softFail: JobModel["softFail"], exitStatus: number): boolean {
  if (softFail === null || exitStatus === 0) return false;
  if (softFail === true) return true;
  return softFail.some((status) => status === "*" || status === exitStatus);
}

function allowedStates(from: Transitions): string {
  const states = Object.keys(from).map((state) => `"${state}"`);
  const list = states.length === 1 ? states[0] : `${states.slice(0, -1).join(", ")} or ${states.at(-1)}`;
  return `only a job in state ${list} can`;
}
