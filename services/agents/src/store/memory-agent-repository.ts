import {
  type AgentDoc,
  type AgentRepository,
  type JobTokenDoc,
  LIVE_STATES,
  overflowMarks,
  type QueueAgentCount,
} from "./agent-repository.js";

/** Binary string order, as MongoDB sorts without a collation. */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** MongoDB's duplicate key error, as `isDuplicateKeyError` recognises it. */
function duplicateKey(what: string): Error {
  return Object.assign(new Error(`E11000 duplicate key error: ${what}`), { code: 11000 });
}

/** An in-memory store with the agent repository's inspection helpers for tests. */
export interface MemoryAgentRepository extends AgentRepository {
  /** Every stored agent (copies), in insertion order. */
  allAgents(): AgentDoc[];
  /** Every stored job token (copies). */
  allJobTokens(): JobTokenDoc[];
}

/**
 * An in-memory AgentRepository with the semantics of the MongoDB one (unique access token and job token hashes,
 * compare-and-set updates, `$max` sightings, live-state filters, binary name order), for unit tests. Every read and
 * write works on copies, so callers never share state with the store.
 */
export function createMemoryAgentRepository(): MemoryAgentRepository {
  const agents = new Map<string, AgentDoc>();
  const jobTokens = new Map<string, JobTokenDoc>();
  const copy = <T>(v: T): T => structuredClone(v);
  const live = (a: AgentDoc) => LIVE_STATES.includes(a.connectionState);
  const containsIgnoringCase = (text: string, part: string) => text.toLowerCase().includes(part.toLowerCase());

  return {
    async insertAgent(agent) {
      if (agents.has(agent._id)) throw duplicateKey("_id");
      if ([...agents.values()].some((a) => a.accessTokenHash === agent.accessTokenHash)) {
        throw duplicateKey("accessTokenHash");
      }
      agents.set(agent._id, copy(agent));
    },
    findAgent: async (id) => copy(agents.get(id) ?? null),
    findAgentByTokenHash: async (hash) => copy([...agents.values()].find((a) => a.accessTokenHash === hash) ?? null),
    async updateAgent(id, update, guard = {}, mark) {
      const agent = agents.get(id);
      if (!agent) return null;
      if (guard.connectionStates && !guard.connectionStates.includes(agent.connectionState)) return null;
      if (guard.currentJobId !== undefined && agent.currentJobId !== guard.currentJobId) return null;
      if (guard.paused !== undefined && agent.paused !== guard.paused) return null;
      const updated: AgentDoc = { ...agent, ...copy(update) };
      if (mark !== undefined) {
        const marks = [...(agent.eventMarks ?? []), mark];
        const old = overflowMarks(marks);
        updated.eventMarks = marks.filter((m) => !old.includes(m));
      }
      agents.set(id, updated);
      return copy(updated);
    },
    async touchAgents(seen) {
      for (const [id, at] of seen) {
        const agent = agents.get(id);
        if (agent && agent.lastSeenAt.getTime() < at.getTime()) agents.set(id, { ...agent, lastSeenAt: new Date(at) });
      }
    },
    async silentAgents(before, limit) {
      return [...agents.values()]
        .filter(
          (a) =>
            (live(a) && a.lastSeenAt.getTime() < before.getTime()) ||
            (a.connectionState === "lost" && a.currentJobId !== null),
        )
        .sort((a, b) => a.lastSeenAt.getTime() - b.lastSeenAt.getTime())
        .slice(0, limit)
        .map(copy);
    },
    async listAgents(organizationId, filter, skip, limit) {
      return [...agents.values()]
        .filter(
          (a) =>
            a.organizationId === organizationId &&
            live(a) &&
            (!filter.name || containsIgnoringCase(a.name, filter.name)) &&
            (!filter.hostname || containsIgnoringCase(a.hostname, filter.hostname)) &&
            (!filter.version || a.version.startsWith(filter.version)),
        )
        .sort((a, b) => cmp(a.name, b.name) || cmp(a._id, b._id))
        .slice(skip, skip + limit)
        .map(copy);
    },
    async idleAgentsOfQueue(organizationId, clusterId, queue, limit) {
      return [...agents.values()]
        .filter(
          (a) =>
            a.organizationId === organizationId &&
            a.clusterId === clusterId &&
            a.connectionState === "connected" &&
            a.queue === queue &&
            a.currentJobId === null,
        )
        .slice(0, limit)
        .map(copy);
    },
    async countAgents(organizationId, clusterId) {
      const counts = new Map<string, QueueAgentCount>();
      for (const a of agents.values()) {
        if (a.organizationId !== organizationId) continue;
        if (clusterId && a.clusterId !== clusterId) continue;
        if (a.connectionState !== "connected" && a.connectionState !== "stopping") continue;
        const busy = a.currentJobId !== null;
        const key = `${busy ? 1 : 0}${a.queue}`;
        const entry = counts.get(key) ?? { queue: a.queue, busy, count: 0 };
        entry.count++;
        counts.set(key, entry);
      }
      return [...counts.values()];
    },
    async insertJobToken(token) {
      if (jobTokens.has(token._id)) throw duplicateKey("_id");
      if ([...jobTokens.values()].some((t) => t.hash === token.hash)) throw duplicateKey("hash");
      jobTokens.set(token._id, copy(token));
    },
    findJobTokenByHash: async (hash) => copy([...jobTokens.values()].find((t) => t.hash === hash) ?? null),
    async revokeJobTokens(jobId, at) {
      for (const [id, token] of jobTokens) {
        if (token.jobId === jobId && token.revokedAt === null) jobTokens.set(id, { ...token, revokedAt: new Date(at) });
      }
    },
    allAgents: () => [...agents.values()].map(copy),
    allJobTokens: () => [...jobTokens.values()].map(copy),
  };
}
