import { Code, ConnectError } from "@connectrpc/connect";
import { failedPrecondition, invalidFields, notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Build } from "../domain/build.js";
import type { AgentSnapshot, Job } from "../domain/job.js";
import { jobEnvironment } from "../domain/job-env.js";
import { stampsFor } from "../domain/job-stamps.js";
import { finishedExitStatus } from "../domain/promised-failure.js";
import { applyJobEvent, isFinishedJobState, type JobEvent } from "../domain/state-machine.js";
import { REPRIORITIZABLE_JOB_STATES, STARTED_ON_AGENT_STATES } from "../domain/state-sets.js";
import type { BuildWithJobs, Reconcile } from "../lifecycle/reconcile.js";
import { createReconcileCoalescer } from "../lifecycle/reconcile-coalescer.js";
import type { JobUpdate } from "../store/build-repository.js";
import type { JobRetries } from "./job-retries.js";
import { createLockedRounds } from "./locked-rounds.js";

/**
 * Whether a transition was refused because the job moved on or went meanwhile (FailedPrecondition, NotFound): what a
 * sweep expects of a job it read a moment before. Any other failure (the database unreachable) is worth a warning.
 */
export function movedOn(err: unknown): boolean {
  const code = ConnectError.from(err).code;
  return code === Code.FailedPrecondition || code === Code.NotFound;
}

/** The longest timeout a job may be given: a week. */
const MAX_TIMEOUT_MINUTES = 7 * 24 * 60;
/** The largest dispatch priority either way (docs/limits.md). */
export const MAX_PRIORITY = 1_000_000;

/** Details of a transition beyond the event itself. */
export interface TransitionOptions {
  /** When it happened; now when absent. */
  at?: Date;
  /** For assign: the agent taking the job. */
  agent?: AgentSnapshot;
  /** For assign: the cluster queue it is dispatched through, when its cluster has that queue object. */
  clusterQueueId?: string;
  /** The event applies only while the job is held by this agent. */
  agentId?: string;
  /** For finish: how the process ended. */
  signal?: string;
  signalReason?: string;
}

/** A job after a transition, with its build and the build's jobs. */
export interface TransitionResult extends BuildWithJobs {
  job: Job;
}

/** A transition waiting for its build's lock: settled with the job after its write, or the whole answer of a repeat. */
interface Waiting {
  jobId: string;
  event: JobEvent;
  opts: TransitionOptions;
  resolve(result: TransitionResult | { updated: Job }): void;
  reject(err: unknown): void;
}

/** The most transitions of one build written in one round (its jobs are read by one `$in` of their ids). */
const MAX_ROUND = 100;

/** Moving single jobs through their states, for agents (assign, accept, start, finish) and the sweepers. */
export function createJobTransitions(
  ctx: BuildsContext,
  reconcile: Reconcile,
  retries: JobRetries,
  /** Continues a build's cancel in the background (lifecycle/cancel-continuation.ts). */
  continueCancel: (buildId: string) => void = () => {},
) {
  const { repo, now, withLock } = ctx;
  const reconcileAfter = createReconcileCoalescer(withLock, reconcile);

  /**
   * Applies `event` to a job under its build's lock and stores it with a compare-and-set; then the build is reconciled
   * by a reconcile shared with the other writes waiting for one (lifecycle/reconcile-coalescer.ts).
   */
  const apply = async (
    jobId: string,
    event: JobEvent,
    opts: TransitionOptions = {},
    /** The job as the caller just read it (only its build and pipeline are taken from it: the write reads it again). */
    known?: Job | null,
  ): Promise<TransitionResult> => {
    const found = jobId === "" ? null : known !== undefined ? known : await repo.findJob(jobId);
    if (!found) throw notFound("job");
    const written = await write(found, jobId, event, opts);
    if ("build" in written) return written;
    const { build, jobs } = await reconcileAfter(found.buildId);
    // Announced after the reconcile, so that its writes find the outbox entry recorded before the write still standing.
    ctx.publishCounts(found.pipelineId);
    return { job: jobs.find((j) => j.id === jobId) ?? written.updated, build, jobs };
  };

  /**
   * A transition's checks on the job as read under its build's lock (`itsBuild`: the build, read for an assign's first
   * try): the update to write, or the whole answer of a repeat already reconciled. Throws what the caller is answered.
   */
  const plan = async (
    w: Waiting,
    job: Job | undefined,
    itsBuild: Build | null | undefined,
  ): Promise<{ update: JobUpdate; job: Job } | { answer: TransitionResult }> => {
    const { event, opts } = w;
    if (!job) throw notFound("job");
    // A job goes to an agent only once its build stands: a creation stores its jobs first (build-creation.ts), and
    // those of a creation cut off stand without a build until the creation repair removes them.
    if (itsBuild === null) throw failedPrecondition("The job's build is still being created");
    // A large build's cancel writes its jobs in batches: one it has not reached yet goes to no agent, and a cancel a
    // crash cut short goes on (in the background: agents asking for its jobs must not each read the build).
    if (itsBuild?.cancelRequested) {
      continueCancel(job.buildId);
      throw failedPrecondition("The job's build is being canceled");
    }
    if (opts.agentId !== undefined && job.agent?.id !== opts.agentId) {
      // To an agent accepting it, a job offered to another is as one that does not exist: the agent API answers
      // both 404, so that no agent learns of other jobs (docs/compatibility.md#agent-credentials).
      if (event.type === "accept") throw notFound("job");
      throw failedPrecondition("The job is not assigned to this agent");
    }
    // A promised failure is the floor of what a finish records (domain/promised-failure.ts).
    const result = applyJobEvent(
      job,
      event.type === "finish" ? { ...event, exitStatus: finishedExitStatus(job, event.exitStatus) } : event,
    );
    if (!result.ok) {
      // An agent repeats a start or finish when its call failed, for example because the process serving it was
      // killed (several replicas, SIGKILL) after the job's compare-and-set and before the build was reconciled: the
      // repeat is refused, since the job moved already, but the build is brought in line with its jobs first (a
      // compare-and-set like any reconcile, so safe beside another replica's). An automatic retry the dead process
      // did not make is not made up: only the process that stored the failure knows it is not under way in another
      // replica.
      if (event.type === "start" || event.type === "finish") {
        const reconciled = await reconcile(job.buildId);
        // A repeated start of the job this agent runs (the answer to its first was lost) answers the same:
        // Buildkite's agent gives a job up when its start is refused, and the job would then fail as lost.
        if (event.type === "start" && opts.agentId !== undefined && STARTED_ON_AGENT_STATES.includes(job.state)) {
          return { answer: { job: reconciled.jobs.find((j) => j.id === job.id) ?? job, ...reconciled } };
        }
      }
      throw failedPrecondition(result.reason);
    }
    const next = result.job;
    const at = opts.at ?? now();
    const update: JobUpdate = {
      state: next.state,
      exitStatus: next.exitStatus,
      softFailed: next.softFailed,
      ...stampsFor(job, next.state, at),
    };
    // The server enforces timeouts (docs/compatibility.md#cancellation-and-timeouts): a running job's deadline is set
    // when it starts.
    if (event.type === "start" && job.timeoutInMinutes !== null)
      update.deadlineAt = new Date(at.getTime() + job.timeoutInMinutes * 60_000);
    if (event.type === "assign") {
      update.agent = opts.agent ?? null;
      // Kept once known: the job was dispatched through that queue (an unassign does not change its queue).
      if (opts.clusterQueueId) update.clusterQueueId = opts.clusterQueueId;
    }
    if (event.type === "unassign") Object.assign(update, { agent: null, assignedAt: null });
    if (event.type === "finish") {
      update.signal = opts.signal || null;
      update.signalReason = opts.signalReason || null;
    }
    return { update, job };
  };

  /**
   * One round of a build's transitions under its lock (locked-rounds.ts): the jobs read in one command, each checked
   * (plan), the changes written together (one outbox record, one write, one publish round: changeEach), each retried
   * from a fresh read while its compare-and-set misses. Settles every transition of the round.
   */
  const writeRound = async (buildId: string, round: Waiting[]): Promise<void> => {
    let left = round;
    for (let attempt = 0; attempt < MAX_ATTEMPTS && left.length > 0; attempt++) {
      const assigning = attempt === 0 && left.some((w) => w.event.type === "assign");
      const [read, itsBuild] = await Promise.all([
        repo.findJobs(left.map((w) => w.jobId)),
        assigning ? repo.findBuildById(buildId) : undefined,
      ]);
      const byId = new Map(read.map((job) => [job.id, job]));
      const changes: Array<{ w: Waiting; job: Job; update: JobUpdate }> = [];
      for (const w of left) {
        try {
          const planned = await plan(w, byId.get(w.jobId), w.event.type === "assign" ? itsBuild : undefined);
          if ("answer" in planned) w.resolve(planned.answer);
          else changes.push({ w, ...planned });
        } catch (err) {
          w.reject(err);
        }
      }
      const [firstChange] = changes;
      if (!firstChange) return;
      await ctx.markCounts(firstChange.job.pipelineId);
      const written = await ctx.stateEvents.changeEach(
        changes.map(({ w, job, update }) => ({ job, update, ...(w.opts.agentId ? { agentId: w.opts.agentId } : {}) })),
      );
      left = [];
      for (const [i, { w, job }] of changes.entries()) {
        const updated = written[i];
        if (!updated) {
          left.push(w);
          continue;
        }
        try {
          if (updated.state === "failed" || updated.state === "timed_out") {
            await retries.retryAutomatically(updated, await repo.jobsOf([job.buildId]));
          }
          w.resolve({ updated });
        } catch (err) {
          w.reject(err);
        }
      }
    }
    for (const w of left) w.reject(new Error(`job ${w.jobId} kept changing under ${MAX_ATTEMPTS} attempts`));
  };

  const addToRound = createLockedRounds<Waiting>(withLock, {
    max: MAX_ROUND,
    idOf: (w) => w.jobId,
    run: writeRound,
    fail: (w, err) => w.reject(err),
  });

  /** The job's write under its build's lock: the job after it, or the whole answer of a repeat already reconciled. */
  const write = (
    found: Job,
    jobId: string,
    event: JobEvent,
    opts: TransitionOptions,
  ): Promise<TransitionResult | { updated: Job }> =>
    new Promise((resolve, reject) => addToRound(found.buildId, { jobId, event, opts, resolve, reject }));

  return {
    apply,

    /** Gives a scheduled job to an agent; FailedPrecondition when it is no longer scheduled. */
    assign: (jobId: string, agent: AgentSnapshot, clusterQueueId = "") =>
      apply(jobId, { type: "assign" }, { agent, ...(clusterQueueId ? { clusterQueueId } : {}) }),

    /**
     * The agent a job is assigned to accepts it: the job with the environment it runs with. Accepting again a job
     * the same agent already accepted answers the same (the agent retries when an answer is lost).
     */
    async accept(jobId: string, agentId: string) {
      const current = jobId === "" ? null : await repo.findJob(jobId);
      if (current?.state === "accepted" && current.agent?.id === agentId) {
        const build = await repo.findBuildById(current.buildId);
        if (build) return { job: current, build, jobs: [], env: jobEnvironment(build, current) };
      }
      const result = await apply(jobId, { type: "accept" }, { agentId }, current);
      return { ...result, env: jobEnvironment(result.build, result.job) };
    },

    /** Changes an unfinished command job's timeout (`buildkite-agent job update timeout N`). */
    async setTimeout(jobId: string, minutes: number): Promise<Job> {
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_TIMEOUT_MINUTES)
        throw invalidFields([{ field: "timeout_in_minutes", code: `must be from 1 to ${MAX_TIMEOUT_MINUTES}` }]);
      const found = jobId === "" ? null : await repo.findJob(jobId);
      if (!found) throw notFound("job");
      return withLock(found.buildId, async () => {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const job = await repo.findJob(jobId);
          if (!job) throw notFound("job");
          if (job.type !== "script" || isFinishedJobState(job.state))
            throw failedPrecondition("Only unfinished command jobs can be updated");
          // A running job's deadline moves with its timeout, counted from when it started.
          const deadlineAt = job.startedAt ? new Date(job.startedAt.getTime() + minutes * 60_000) : null;
          const updated = await repo.updateJob(job.id, job.state, { timeoutInMinutes: minutes, deadlineAt });
          if (updated) return updated;
        }
        throw new Error(`job ${jobId} kept changing under ${MAX_ATTEMPTS} attempts`);
      });
    },

    /**
     * Changes the dispatch priority of a command job no agent has taken yet (REST's reprioritize): dispatch reads
     * the jobs' `priority` (docs/compatibility.md#jobs-and-logs), so it takes effect from the next round of dispatch.
     */
    async setPriority(jobId: string, priority: number): Promise<Job> {
      if (!Number.isInteger(priority) || Math.abs(priority) > MAX_PRIORITY)
        throw invalidFields([
          { field: "priority", code: `must be an integer from -${MAX_PRIORITY} to ${MAX_PRIORITY}` },
        ]);
      const found = jobId === "" ? null : await repo.findJob(jobId);
      if (!found) throw notFound("job");
      return withLock(found.buildId, async () => {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const job = await repo.findJob(jobId);
          if (!job) throw notFound("job");
          if (job.type !== "script" || !REPRIORITIZABLE_JOB_STATES.includes(job.state))
            throw failedPrecondition("Only command jobs no agent has taken yet can be reprioritized");
          if (job.priority === priority) return job;
          const updated = await repo.updateJob(job.id, job.state, { priority });
          if (updated) return updated;
        }
        throw new Error(`job ${jobId} kept changing under ${MAX_ATTEMPTS} attempts`);
      });
    },

    /**
     * Puts jobs assigned before `before` and never accepted back to scheduled (their agent died or never heard of
     * them), at most `limit` per call; returns how many went back.
     */
    async requeueStale(before: Date, limit: number): Promise<number> {
      let requeued = 0;
      for (const job of await repo.staleAssignments(before, limit)) {
        try {
          await apply(job.id, { type: "unassign" }, job.agent ? { agentId: job.agent.id } : {});
          requeued++;
          ctx.logger.info({ jobId: job.id, agentId: job.agent?.id }, "unaccepted job assignment returned to the queue");
        } catch (err) {
          // It moved on meanwhile (accepted, canceled): nothing to do.
          if (movedOn(err)) ctx.logger.debug({ err, jobId: job.id }, "stale assignment changed before it was requeued");
          else ctx.logger.warn({ err, jobId: job.id }, "stale assignment not requeued; the next sweep tries again");
        }
      }
      return requeued;
    },
  };
}

export type JobTransitions = ReturnType<typeof createJobTransitions>;
