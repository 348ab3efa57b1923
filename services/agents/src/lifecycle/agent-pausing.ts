import { Code, ConnectError } from "@connectrpc/connect";
import { failedPrecondition, type Logger, notFound } from "@conveyor/runtime";
import { isPaused, PAUSE_LIMITS, pauseRequestProblem } from "../domain/agent-pause.js";
import { type AgentDoc, LIVE_STATES, type PausedBy } from "../store/agent-repository.js";
import type { AgentDirectory } from "./agent-directory.js";

export interface AgentPausingDeps {
  directory: AgentDirectory;
  logger: Logger;
  now: () => Date;
}

/** What a pause asks for. */
export interface PauseRequest {
  note: string;
  timeoutInMinutes?: number | undefined;
  /** The user pausing it over REST; null when the agent pauses itself from a job. */
  pausedBy: PausedBy | null;
}

/** The fields that clear a pause. */
const RESUMED = {
  paused: false,
  pausedNote: null,
  pausedAt: null,
  pausedBy: null,
  pausedTimeoutInMinutes: null,
} as const;

/**
 * Pausing and resuming agents (from REST, or by the agent from inside a job). Every change goes through the
 * directory, which announces it (agent_changed), so every process drops its cached copy and the agent's next ping
 * says pause or carries on. A pause past its timeout is ended by the next ping (`expire`).
 */
export function createAgentPausing(deps: AgentPausingDeps) {
  const { directory, logger, now } = deps;

  const requireAgent = async (organizationId: string, agentId: string): Promise<AgentDoc> => {
    const agent = agentId === "" ? null : await directory.fresh(agentId);
    if (!agent || agent.organizationId !== organizationId) throw notFound("agent");
    return agent;
  };

  return {
    /** Pauses a live agent that is not paused already; its running job goes on. */
    async pause(organizationId: string, agentId: string, req: PauseRequest): Promise<AgentDoc> {
      const problem = pauseRequestProblem(req.note, req.timeoutInMinutes);
      // A sentence, not field errors: the agent prints only the message of a 422.
      if (problem) throw new ConnectError(problem, Code.InvalidArgument);
      const agent = await requireAgent(organizationId, agentId);
      if (!LIVE_STATES.includes(agent.connectionState) || agent.stopRequested)
        throw failedPrecondition(
          `Agent can't be paused because it's ${agent.stopRequested ? "stopping" : agent.connectionState}`,
        );
      if (isPaused(agent, now())) throw failedPrecondition("Agent is already paused");
      const timeout = req.timeoutInMinutes ?? PAUSE_LIMITS.defaultTimeoutMinutes;
      const paused = await directory.update(
        agent,
        {
          paused: true,
          pausedNote: req.note.trim() === "" ? null : req.note,
          pausedAt: now(),
          pausedBy: req.pausedBy,
          pausedTimeoutInMinutes: timeout,
        },
        { connectionStates: LIVE_STATES, paused: agent.paused },
      );
      if (!paused) throw failedPrecondition("Agent changed while it was being paused: try again");
      logger.info({ agentId, timeoutInMinutes: timeout, by: req.pausedBy?.id ?? "job" }, "agent paused");
      return paused;
    },

    /** Resumes a paused agent. */
    async resume(organizationId: string, agentId: string): Promise<AgentDoc> {
      const agent = await requireAgent(organizationId, agentId);
      if (!isPaused(agent, now())) throw failedPrecondition("Agent is not paused");
      const resumed = await directory.update(agent, RESUMED, { paused: true });
      if (!resumed) throw failedPrecondition("Agent is not paused");
      logger.info({ agentId }, "agent resumed");
      return resumed;
    },

    /** Ends the pause of an agent whose pause timed out; returns the agent as it is now. */
    async expire(agent: AgentDoc): Promise<AgentDoc> {
      if (!agent.paused || isPaused(agent, now())) return agent;
      const resumed = await directory.update(agent, RESUMED, { paused: true });
      if (resumed) logger.info({ agentId: agent._id }, "agent resumed: its pause timed out");
      return resumed ?? (await directory.fresh(agent._id)) ?? agent;
    },
  };
}

export type AgentPausing = ReturnType<typeof createAgentPausing>;
