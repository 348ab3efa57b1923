/**
 * The ids of a cluster's queue objects by key, as the agents service keeps them, for naming new jobs' cluster queues
 * (domain/job.ts clusterQueueIdOf; docs/compatibility.md#clusters-and-queues).
 *
 * One read per cluster at most every QUEUE_IDS_TTL_MS (concurrent readers share it), like the agents service's own
 * queue cache (its queue-directory.ts): a build of thousands of jobs, or many builds at once, ask once. A queue made or
 * deleted is seen within that time. A read that fails (the agents service unreachable, or slower than
 * QUEUE_IDS_TIMEOUT_MS) answers null: the jobs are made without a queue, and the agent that takes each one names it.
 */
import type { Logger } from "@conveyor/runtime";
import type { QueueIds } from "../domain/job.js";

/** How long a cluster's queues, as read, are trusted. */
export const QUEUE_IDS_TTL_MS = 2_000;
/** How long one read may take before the jobs are made without it. */
export const QUEUE_IDS_TIMEOUT_MS = 2_000;
/** The most clusters whose queues are kept. */
const MAX_CLUSTERS = 10_000;

/** A cluster's queues as the agents service lists them. */
export type ListQueues = (
  organizationId: string,
  clusterId: string,
) => Promise<ReadonlyArray<{ id: string; key: string }>>;

export interface ClusterQueueIds {
  /** The ids of a cluster's queue objects by key; null for no cluster, or when they could not be read. */
  of(organizationId: string, clusterId: string | null): Promise<QueueIds>;
}

interface Entry {
  at: number;
  ids: Promise<QueueIds>;
}

export function createClusterQueueIds(deps: {
  list: ListQueues;
  logger: Logger;
  nowMs?: () => number;
}): ClusterQueueIds {
  const nowMs = deps.nowMs ?? Date.now;
  const entries = new Map<string, Entry>();

  const read = async (organizationId: string, clusterId: string): Promise<QueueIds> => {
    try {
      const queues = await deps.list(organizationId, clusterId);
      return new Map(queues.map((q) => [q.key, q.id]));
    } catch (err) {
      deps.logger.debug({ err, organizationId, clusterId }, "cluster queues not read: new jobs name no queue yet");
      return null;
    }
  };

  return {
    of(organizationId, clusterId) {
      if (clusterId === null || clusterId === "") return Promise.resolve(null);
      const k = `${organizationId}/${clusterId}`;
      const found = entries.get(k);
      if (found && nowMs() - found.at < QUEUE_IDS_TTL_MS) return found.ids;
      // A failed read is kept too, for the same time: while the agents service does not answer, creations do not
      // each wait for it.
      const ids = read(organizationId, clusterId);
      entries.delete(k);
      if (entries.size >= MAX_CLUSTERS) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      entries.set(k, { at: nowMs(), ids });
      return ids;
    },
  };
}

/** No agents service to ask (tests): jobs name their queue when an agent takes them. */
export const noClusterQueueIds: ClusterQueueIds = { of: async () => null };
