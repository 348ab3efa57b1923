import type { QueueDoc, QueueRepository } from "../store/queue-repository.js";

/** How long a cluster's queues, as read, are trusted by this process (another replica's pause is seen within it). */
export const QUEUE_CACHE_TTL_MS = 2_000;
/** The most clusters whose queues one process keeps. */
const MAX_CLUSTERS = 10_000;

interface Entry {
  at: number;
  queues: Promise<QueueDoc[]>;
}

/**
 * A cluster's queues as dispatch and registration need them, read at most once per QUEUE_CACHE_TTL_MS per cluster
 * (concurrent readers share one read). This process's own writes drop the entry at once, so a pause or resume made
 * here takes effect on the next ping; one made on another replica within QUEUE_CACHE_TTL_MS.
 */
export function createQueueDirectory(deps: { queues: QueueRepository; nowMs?: () => number }) {
  const nowMs = deps.nowMs ?? Date.now;
  const entries = new Map<string, Entry>();
  const key = (organizationId: string, clusterId: string) => `${organizationId}/${clusterId}`;

  const queuesOf = (organizationId: string, clusterId: string): Promise<QueueDoc[]> => {
    const k = key(organizationId, clusterId);
    const found = entries.get(k);
    if (found && nowMs() - found.at < QUEUE_CACHE_TTL_MS) return found.queues;
    const queues = deps.queues.listQueues(organizationId, clusterId);
    // A failed read is not kept.
    queues.catch(() => {
      if (entries.get(k)?.queues === queues) entries.delete(k);
    });
    entries.delete(k);
    if (entries.size >= MAX_CLUSTERS) {
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    entries.set(k, { at: nowMs(), queues });
    return queues;
  };

  return {
    queuesOf,
    /** The keys of a cluster's queues whose dispatch is paused. */
    async pausedKeys(organizationId: string, clusterId: string): Promise<Set<string>> {
      const queues = await queuesOf(organizationId, clusterId);
      return new Set(queues.filter((q) => q.dispatchPaused).map((q) => q.key));
    },
    /** Forgets a cluster's queues (this process changed them). */
    forget(organizationId: string, clusterId: string): void {
      entries.delete(key(organizationId, clusterId));
    },
  };
}

export type QueueDirectory = ReturnType<typeof createQueueDirectory>;
