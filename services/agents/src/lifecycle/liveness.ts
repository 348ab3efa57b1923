import type { Logger } from "@conveyor/runtime";
import type { AgentDoc, AgentRepository } from "../store/agent-repository.js";

export interface LivenessDeps {
  repo: AgentRepository;
  logger: Logger;
  now: () => Date;
  /** An agent not seen for this long is lost. */
  lostAfterMs: number;
  /** Marks an agent lost (a compare-and-set on its state); resolves whether it was this call that did. */
  markLost(agent: AgentDoc): Promise<boolean>;
}

/** How many silent agents one sweep handles; the next sweep takes the rest. */
const SWEEP_BATCH = 200;

/**
 * When agents were last seen. A ping or heartbeat only notes the time in memory, so an idle agent's ping costs no
 * query; `flush` writes the sightings in bulk, each agent's at most once a quarter of the lost window (500 agents
 * pinging every 2 s make about 8 writes a second, not 250), rounded to a twelfth of it so that most go together. The
 * database keeps the truth: `sweep` marks agents lost from what is stored, so any replica may run it, and a stored
 * sighting is never older than a quarter window plus a twelfth plus one flush, far less than the window.
 */
export function createLiveness(deps: LivenessDeps) {
  const writeEveryMs = Math.max(1_000, Math.floor(deps.lostAfterMs / 4));
  /**
   * A sighting is written rounded down to a twelfth of the window (5 s of the default minute): the agents seen within
   * the same span are one statement (the repository writes those of one time together), and a stored sighting is at
   * most that much older than the truth, on top of the quarter window between writes.
   */
  const roundMs = Math.max(1_000, Math.floor(deps.lostAfterMs / 12));
  /** Sightings not written yet: the latest per agent. */
  let pending = new Map<string, Date>();
  /** When each agent's sighting was last written (epoch ms), to write each at most once per writeEveryMs. */
  const written = new Map<string, number>();

  return {
    /** Notes that an agent is alive now. */
    touch(agentId: string): void {
      pending.set(agentId, deps.now());
    },

    /**
     * Writes the sightings that are due: an agent's once its last write is a quarter window old (so a sighting of an
     * agent that then went quiet is written too); on failure they are kept for the next flush.
     */
    async flush(): Promise<void> {
      const now = deps.now().getTime();
      const due = new Map<string, Date>();
      const kept = new Map<string, Date>();
      for (const [id, at] of pending) {
        if (now - (written.get(id) ?? 0) >= writeEveryMs)
          due.set(id, new Date(Math.floor(at.getTime() / roundMs) * roundMs));
        else kept.set(id, at);
      }
      pending = kept;
      if (due.size === 0) return;
      try {
        await deps.repo.touchAgents(due);
      } catch (err) {
        for (const [id, at] of due) if (!pending.has(id)) pending.set(id, at);
        throw err;
      }
      for (const id of due.keys()) written.set(id, now);
      // Forget agents long gone, so the map stays the size of the live fleet.
      const forget = now - 2 * deps.lostAfterMs;
      for (const [id, at] of written) if (at < forget && !pending.has(id)) written.delete(id);
    },

    /**
     * Marks agents lost that were not seen within the window, and ends the jobs of lost agents that still hold one
     * (when ending it failed before, say with the builds service down); returns how many agents this call handled.
     */
    async sweep(): Promise<number> {
      const before = new Date(deps.now().getTime() - deps.lostAfterMs);
      let marked = 0;
      for (const agent of await deps.repo.silentAgents(before, SWEEP_BATCH)) {
        // A sighting this process has not written yet still counts.
        const noted = pending.get(agent._id);
        if (noted && noted >= before) continue;
        if (await deps.markLost(agent)) {
          marked++;
          deps.logger.warn(
            { agentId: agent._id, name: agent.name, lastSeenAt: agent.lastSeenAt },
            "agent lost: no ping or heartbeat within the window",
          );
        }
      }
      return marked;
    },
  };
}

export type Liveness = ReturnType<typeof createLiveness>;
