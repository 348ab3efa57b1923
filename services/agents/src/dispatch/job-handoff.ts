import { Code, ConnectError } from "@connectrpc/connect";
import { isRunningJobState } from "@conveyor/ci-rules";
import { CredentialRevokedSchema, JobDispatchedSchema } from "@conveyor/proto/agents";
import { type BuildsService, type Job, JobEventType } from "@conveyor/proto/builds";
import {
  type Client,
  type EventPublisher,
  failedPrecondition,
  hashSecret,
  type Logger,
  newId,
  newSecret,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { JOB_TOKEN_PREFIX } from "../credentials/credentials.js";
import { parseTags, rulesMatch } from "../domain/agent-tags.js";
import type { AgentDirectory } from "../lifecycle/agent-directory.js";
import { jobAgentMessage } from "../rpc/agent-message.js";
import type { AgentDoc, AgentRepository } from "../store/agent-repository.js";
import type { DispatchHints } from "./dispatch-hints.js";

/** The builds RPCs job hand-off uses. */
export type BuildsClient = Pick<
  Client<typeof BuildsService>,
  "getJob" | "assignJob" | "acceptJob" | "transitionJob" | "listDispatchableJobs" | "countQueueJobs"
>;

export interface JobHandoffDeps {
  repo: AgentRepository;
  directory: AgentDirectory;
  hints: DispatchHints;
  builds: BuildsClient;
  events: EventPublisher;
  logger: Logger;
  now: () => Date;
  /** Whether the agent's cluster queue has its dispatch paused (it is then offered nothing); never when absent. */
  dispatchPaused?: (agent: AgentDoc) => Promise<boolean>;
  /** The id of the agent's cluster queue object (its cluster and queue key); "" when there is none. */
  queueIdOf?: (agent: AgentDoc) => Promise<string>;
}

/** States of a job waiting for what comes before it: an acquire of one is answered `locked`. */
const ACQUIRE_WAITING_STATES = ["pending", "waiting", "blocked", "limiting", "limited"];

/** How many waiting jobs one ping tries before giving up (each refused assignment costs one RPC). */
const CANDIDATES_PER_PING = 5;

/** What an agent reports when a job's process ended. */
export interface JobEnd {
  jobId: string;
  exitStatus: number;
  signal: string;
  signalReason: string;
  finishedAt?: Date;
}

/** True for the errors that mean "the job is not (or no longer) in a state for this": a lost race, not a failure. */
function refused(err: unknown): boolean {
  const code = ConnectError.from(err).code;
  return code === Code.FailedPrecondition || code === Code.NotFound;
}

/**
 * The hand-off of jobs between the builds service and agents: offering a waiting job on a ping (the assignment is
 * a compare-and-set in the builds service, so no two agents ever get one job), accepting it with a job token,
 * finishing it, and abandoning the job of an agent that stopped or was lost.
 */
export function createJobHandoff(deps: JobHandoffDeps) {
  const { repo, directory, hints, builds, events, logger, now } = deps;

  /** Frees an agent of a job it no longer holds, and ends the job's tokens. */
  const release = async (agent: AgentDoc, jobId: string) => {
    await repo.revokeJobTokens(jobId, now());
    await events.publish(SUBJECTS.agents.credentialRevoked, CredentialRevokedSchema, { jobId });
    const latest = agent.currentJobId === jobId ? agent : await directory.fresh(agent._id);
    if (latest?.currentJobId === jobId) {
      await directory.update(latest, { currentJobId: null, lastJobFinishedAt: now() }, { currentJobId: jobId });
    }
  };

  /** The job as the builds service holds it now; undefined when it refuses to say (a job gone, say). */
  const jobOf = (jobId: string) =>
    builds
      .getJob({ jobId })
      .then((r) => r.job)
      .catch((err: unknown) => {
        if (refused(err)) return undefined;
        throw err;
      });

  /**
   * Whether the agent still holds the job, in a state it runs it in: after the builds service refused an accept or
   * a finish (an accept of a job already running, a finish before the start), the job is still the agent's, and
   * letting it go would leave the job accepted or running with no agent (no one would ever end it).
   */
  const stillHolds = async (agent: AgentDoc, jobId: string): Promise<boolean> => {
    const job = await jobOf(jobId);
    return job?.agent?.id === agent._id && isRunningJobState(job.state);
  };

  /**
   * Ends the job an agent holds when the agent goes away: an unaccepted job goes back to the queue; a running one
   * fails with exit status -1 and the given reason (a canceling one ends canceled).
   */
  const abandon = async (agent: AgentDoc, signalReason: "agent_lost" | "agent_stop") => {
    const jobId = agent.currentJobId;
    if (!jobId) return;
    try {
      const { job } = await builds.getJob({ jobId });
      if (job?.agent?.id === agent._id) {
        if (job.state === "assigned") {
          await builds.transitionJob({ jobId, event: JobEventType.UNASSIGN, agentId: agent._id });
        } else if (isRunningJobState(job.state)) {
          if (job.state === "accepted") {
            await builds.transitionJob({ jobId, event: JobEventType.START, agentId: agent._id });
          }
          await builds.transitionJob({
            jobId,
            event: JobEventType.FINISH,
            exitStatus: -1,
            signalReason,
            agentId: agent._id,
          });
        }
        logger.warn({ jobId, agentId: agent._id, signalReason, state: job.state }, "job of a departed agent ended");
      }
    } catch (err) {
      if (!refused(err)) throw err;
    }
    await release(agent, jobId);
  };

  return {
    abandon,

    /**
     * A job for an idle agent that pinged, or null. An agent still holding a job it has not started is offered it
     * again (the first offer, or the answer to its accept, may have been lost); a job it holds that moved on is let
     * go first.
     */
    async offer(agent: AgentDoc): Promise<string | null> {
      if (agent.currentJobId) {
        const jobId = agent.currentJobId;
        const job = await jobOf(jobId);
        // Assigned, or accepted without the agent hearing so (its accept answered 5xx: it gives up the job and pings
        // again, as Buildkite's agent does): offered again, and accepting it again answers the same.
        const unstarted = job?.state === "assigned" || job?.state === "accepted";
        if (unstarted && job.agent?.id === agent._id) return jobId;
        if (job && isRunningJobState(job.state) && job.agent?.id === agent._id) {
          // A v3 agent does not ping while it runs a job: this one lost it (a crash between start and finish).
          await abandon(agent, "agent_stop");
        } else {
          await release(agent, jobId);
        }
        const refreshed = await directory.fresh(agent._id);
        if (!refreshed || refreshed.currentJobId) return null;
        agent = refreshed;
      }
      if (agent.ignoreInDispatches) return null;
      const asking = {
        organizationId: agent.organizationId,
        clusterId: agent.clusterId,
        tags: parseTags(agent.metaData),
        dispatchPaused: (await deps.dispatchPaused?.(agent)) ?? false,
      };
      let clusterQueueId: string | undefined;
      for (const candidate of hints.candidates(asking, CANDIDATES_PER_PING)) {
        hints.remove(candidate.id);
        clusterQueueId ??= (await deps.queueIdOf?.(agent)) ?? "";
        try {
          await builds.assignJob({ jobId: candidate.id, agent: jobAgentMessage(agent), clusterQueueId });
        } catch (err) {
          if (refused(err)) continue;
          throw err;
        }
        // Only a connected agent holding nothing takes it: one disconnecting meanwhile must not keep a job.
        const holding = await directory.update(
          agent,
          { currentJobId: candidate.id },
          { currentJobId: null, connectionStates: ["connected"] },
        );
        if (!holding) {
          // The agent took another job meanwhile (two pings at once), or is leaving: give this one back.
          await builds
            .transitionJob({ jobId: candidate.id, event: JobEventType.UNASSIGN, agentId: agent._id })
            .catch((err: unknown) => logger.warn({ err, jobId: candidate.id }, "could not give back a job"));
          return null;
        }
        await events.publish(SUBJECTS.agents.jobDispatched, JobDispatchedSchema, {
          jobId: candidate.id,
          agentId: agent._id,
          organizationId: agent.organizationId,
          clusterId: agent.clusterId ?? "",
        });
        return candidate.id;
      }
      return null;
    },

    /**
     * `--acquire-job`: the agent takes the job it names, outside dispatch (docs/compatibility.md#steps-from-inside-a-job):
     * assigned to it (the builds service's compare-and-set) and accepted at once; `locked` while the job waits for
     * its dependencies, which the agent asks again about. The job must be of the agent's organization and cluster
     * (NotFound otherwise) and its rules must match the agent's tags.
     */
    async acquire(
      agent: AgentDoc,
      jobId: string,
    ): Promise<{ locked: true } | { job: Job; env: Record<string, string>; jobToken: string }> {
      const job = await jobOf(jobId);
      if (!job || job.organizationId !== agent.organizationId || (job.clusterId || null) !== (agent.clusterId || null))
        throw new ConnectError("No job found", Code.NotFound);
      if (agent.currentJobId === jobId && job.agent?.id === agent._id) return this.accept(agent, jobId);
      if (agent.currentJobId) throw failedPrecondition("The agent already holds another job");
      if (ACQUIRE_WAITING_STATES.includes(job.state)) return { locked: true };
      if (job.state !== "scheduled")
        throw failedPrecondition(`The job is ${job.state}: only a scheduled job can be acquired`);
      if (!rulesMatch(job.agentQueryRules, parseTags(agent.metaData)))
        throw failedPrecondition("The agent's tags do not match the job's agent rules");
      const clusterQueueId = (await deps.queueIdOf?.(agent)) ?? "";
      await builds.assignJob({ jobId, agent: jobAgentMessage(agent), clusterQueueId });
      hints.remove(jobId);
      const holding = await directory.update(
        agent,
        { currentJobId: jobId },
        { currentJobId: null, connectionStates: ["connected"] },
      );
      if (!holding) {
        await builds
          .transitionJob({ jobId, event: JobEventType.UNASSIGN, agentId: agent._id })
          .catch((err: unknown) => logger.warn({ err, jobId }, "could not give back a job"));
        throw failedPrecondition("The agent took another job or is leaving");
      }
      await events.publish(SUBJECTS.agents.jobDispatched, JobDispatchedSchema, {
        jobId,
        agentId: agent._id,
        organizationId: agent.organizationId,
        clusterId: agent.clusterId ?? "",
      });
      return this.accept(holding, jobId);
    },

    /** The agent accepts its job: the job, its environment, and a new job token. */
    async accept(agent: AgentDoc, jobId: string): Promise<{ job: Job; env: Record<string, string>; jobToken: string }> {
      let accepted: Awaited<ReturnType<BuildsClient["acceptJob"]>>;
      try {
        accepted = await builds.acceptJob({ jobId, agentId: agent._id });
      } catch (err) {
        if (refused(err) && agent.currentJobId === jobId && !(await stillHolds(agent, jobId))) {
          await release(agent, jobId);
        }
        throw err;
      }
      const job = accepted.job;
      if (!job) throw new Error(`builds service accepted job ${jobId} but returned no job`);
      const jobToken = newSecret(JOB_TOKEN_PREFIX);
      await repo.insertJobToken({
        _id: newId(),
        hash: hashSecret(jobToken),
        jobId,
        buildId: job.buildId,
        agentId: agent._id,
        organizationId: agent.organizationId,
        clusterId: agent.clusterId,
        createdAt: now(),
        revokedAt: null,
      });
      if (agent.currentJobId !== jobId) {
        await directory.update(agent, { currentJobId: jobId }, { currentJobId: agent.currentJobId });
      }
      return { job, env: accepted.env, jobToken };
    },

    /**
     * The agent reports the end of its job: the job finishes (canceled or timed out when it was being stopped),
     * the agent is idle again and the job's tokens stop working. A repeated finish is refused with the reason; a
     * refused finish of a job the agent still holds (one not started) changes nothing: its next ping is offered
     * the job again.
     */
    async finish(agent: AgentDoc, end: JobEnd): Promise<Job | undefined> {
      let job: Job | undefined;
      try {
        const res = await builds.transitionJob({
          jobId: end.jobId,
          event: JobEventType.FINISH,
          exitStatus: end.exitStatus,
          signal: end.signal,
          signalReason: end.signalReason,
          agentId: agent._id,
          ...(end.finishedAt ? { at: toTimestamp(end.finishedAt) } : {}),
        });
        job = res.job;
      } catch (err) {
        // Anything but a refusal (the builds service unreachable, say) keeps the token: the agent retries.
        if (!refused(err)) throw err;
        if (!(await stillHolds(agent, end.jobId))) await release(agent, end.jobId);
        throw failedPrecondition(`The job can't be finished: ${ConnectError.from(err).rawMessage}`);
      }
      await release(agent, end.jobId);
      return job;
    },
  };
}

export type JobHandoff = ReturnType<typeof createJobHandoff>;
