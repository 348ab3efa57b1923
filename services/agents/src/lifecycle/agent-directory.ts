import { AgentChangedSchema } from "@conveyor/proto/agents";
import { type EventPublisher, type Logger, type Outbox, SUBJECTS, writeMarked } from "@conveyor/runtime";
import { LRUCache } from "lru-cache";
import { agentChange, agentEventKey, agentStateEvent, stateSubjectOf } from "../events/agent-events.js";
import type { AgentDoc, AgentGuard, AgentRepository, AgentUpdate } from "../store/agent-repository.js";

export interface AgentDirectoryDeps {
  repo: AgentRepository;
  events: EventPublisher;
  /** Where state events are recorded before their write (events/agent-events.ts); carries agentEventResolvers. */
  outbox: Outbox;
  logger: Logger;
  /** How long an agent read from the database is trusted without reading it again. */
  ttlMs: number;
}

/**
 * Agents as this process sees them: reads go through a short-lived cache (an idle agent's ping must not cost a
 * query), and every change goes to the database as a compare-and-set, refreshes the cache and is announced, so
 * other processes drop their copy at once (the TTL bounds staleness if an announcement is missed). A change of
 * connection state is announced at least once: its event is recorded in the outbox before the write
 * (events/agent-events.ts).
 */
export function createAgentDirectory(deps: AgentDirectoryDeps) {
  const { repo, events, outbox } = deps;
  const cache = new LRUCache<string, AgentDoc>({ max: 100_000, ttl: Math.max(deps.ttlMs, 1) });

  /**
   * The compare-and-set; one that changes the connection state is a marked write: its state event is recorded first
   * (as the writer's copy and the update make the agent), and published from the agent as written.
   */
  const write = (agent: AgentDoc, update: AgentUpdate, guard?: AgentGuard): Promise<AgentDoc | null> => {
    const subject = stateSubjectOf(agent.connectionState, update);
    if (!subject) return repo.updateAgent(agent._id, update, guard);
    const previous = agent.connectionState;
    return writeMarked(outbox, {
      marks: agent.eventMarks,
      events: (mark) => [
        { key: agentEventKey(agent._id, mark), event: agentStateEvent(subject, { ...agent, ...update }, previous) },
      ],
      write: (_marks, mark) => repo.updateAgent(agent._id, update, guard, mark),
      written: (updated) => [agentStateEvent(subject, updated, previous)],
    });
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
      const updated = await write(agent, update, guard);
      if (!updated) {
        cache.delete(agent._id);
        return null;
      }
      cache.set(updated._id, updated);
      await events.publish(
        SUBJECTS.agents.agentChanged,
        AgentChangedSchema,
        agentChange(updated, agent.connectionState),
      );
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
