import { AgentChangedSchema } from "@conveyor/proto/agents";
import { type EventPublisher, type Logger, SUBJECTS } from "@conveyor/runtime";
import { LRUCache } from "lru-cache";
import { agentMessage } from "../rpc/agent-message.js";
import type { AgentDoc, AgentGuard, AgentRepository, AgentUpdate, ConnectionState } from "../store/agent-repository.js";

/** The subject announcing that an agent entered a connection state, for the states that have one. */
const STATE_SUBJECTS: Partial<Record<ConnectionState, string>> = {
  connected: SUBJECTS.agents.agentConnected,
  disconnected: SUBJECTS.agents.agentDisconnected,
  stopped: SUBJECTS.agents.agentDisconnected,
  lost: SUBJECTS.agents.agentLost,
  stopping: SUBJECTS.agents.agentStopping,
};

export interface AgentDirectoryDeps {
  repo: AgentRepository;
  events: EventPublisher;
  logger: Logger;
  /** How long an agent read from the database is trusted without reading it again. */
  ttlMs: number;
}

/**
 * Agents as this process sees them: reads go through a short-lived cache (an idle agent's ping must not cost a
 * query), and every change goes to the database as a compare-and-set, refreshes the cache and is announced, so
 * other processes drop their copy at once (the TTL bounds staleness if an announcement is missed).
 */
export function createAgentDirectory(deps: AgentDirectoryDeps) {
  const { repo, events } = deps;
  const cache = new LRUCache<string, AgentDoc>({ max: 100_000, ttl: Math.max(deps.ttlMs, 1) });

  /** Announces a change: a connection state's own subject when it changed, and agent_changed always. */
  const announce = async (agent: AgentDoc, previousState: ConnectionState) => {
    const value = { agent: agentMessage(agent), previousState };
    const subject = agent.connectionState !== previousState ? STATE_SUBJECTS[agent.connectionState] : undefined;
    if (subject) await events.publish(subject, AgentChangedSchema, value);
    await events.publish(SUBJECTS.agents.agentChanged, AgentChangedSchema, value);
  };

  return {
    /** The agent, from the cache when fresh; null when there is no such agent. */
    async get(id: string): Promise<AgentDoc | null> {
      const cached = cache.get(id);
      if (cached) return cached;
      const agent = await repo.findAgent(id);
      if (agent) cache.set(id, agent);
      return agent;
    },

    /** The agent as stored now, bypassing the cache. */
    async fresh(id: string): Promise<AgentDoc | null> {
      const agent = await repo.findAgent(id);
      if (agent) cache.set(id, agent);
      else cache.delete(id);
      return agent;
    },

    /** Stores a new agent. */
    async insert(agent: AgentDoc): Promise<void> {
      await repo.insertAgent(agent);
      cache.set(agent._id, agent);
    },

    /**
     * Applies `update` if the stored agent still matches `guard`, and announces it; null when the guard failed (the
     * cached copy is dropped then, since it was stale).
     */
    async update(agent: AgentDoc, update: AgentUpdate, guard?: AgentGuard): Promise<AgentDoc | null> {
      const updated = await repo.updateAgent(agent._id, update, guard);
      if (!updated) {
        cache.delete(agent._id);
        return null;
      }
      cache.set(updated._id, updated);
      await announce(updated, agent.connectionState);
      return updated;
    },

    /** Drops a cached agent (another process changed it). */
    evict(id: string): void {
      cache.delete(id);
    },

    /** Drops every cached agent (this process may have missed announcements of changes). */
    clear(): void {
      cache.clear();
    },
  };
}

export type AgentDirectory = ReturnType<typeof createAgentDirectory>;
