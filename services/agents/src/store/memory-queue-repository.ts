import {
  DuplicateQueueError,
  MAX_QUEUES_PER_CLUSTER,
  type QueueDoc,
  type QueueRepository,
} from "./queue-repository.js";

/** An in-memory QueueRepository with the MongoDB one's semantics (a key unique in its cluster), for unit tests. */
export function createMemoryQueueRepository(): QueueRepository {
  const queues = new Map<string, QueueDoc>();
  const copy = <T>(v: T): T => structuredClone(v);
  const mine = (q: QueueDoc | undefined, organizationId: string, clusterId: string) =>
    q && q.organizationId === organizationId && q.clusterId === clusterId ? q : undefined;

  return {
    async insertQueue(queue) {
      const taken = [...queues.values()].some(
        (q) => q.organizationId === queue.organizationId && q.clusterId === queue.clusterId && q.key === queue.key,
      );
      if (taken) throw new DuplicateQueueError(queue.key);
      queues.set(queue._id, copy(queue));
    },
    findQueue: async (organizationId, clusterId, id) => copy(mine(queues.get(id), organizationId, clusterId) ?? null),
    async listQueues(organizationId, clusterId) {
      return [...queues.values()]
        .filter((q) => q.organizationId === organizationId && q.clusterId === clusterId)
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .slice(0, MAX_QUEUES_PER_CLUSTER)
        .map(copy);
    },
    async updateQueue(organizationId, clusterId, id, change, guard) {
      const queue = mine(queues.get(id), organizationId, clusterId);
      if (!queue || (guard && queue.dispatchPaused !== guard.paused)) return null;
      Object.assign(queue, copy(change));
      return copy(queue);
    },
    deleteQueue: async (organizationId, clusterId, id) =>
      mine(queues.get(id), organizationId, clusterId) ? queues.delete(id) : false,
  };
}
