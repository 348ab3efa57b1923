import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/** A user as a queue records who made or paused it. */
export interface QueueUserRef {
  id: string;
  name: string;
  email: string;
  avatarUrl: string;
}

/** A queue of a cluster (docs/compatibility.md#clusters-and-queues). */
export interface QueueDoc {
  _id: string;
  organizationId: string;
  clusterId: string;
  /** What agents' `queue` tag and jobs' `queue` rule name; unique in the cluster. */
  key: string;
  description: string;
  dispatchPaused: boolean;
  dispatchPausedAt: Date | null;
  dispatchPausedNote: string | null;
  dispatchPausedBy: QueueUserRef | null;
  createdAt: Date;
  createdBy: QueueUserRef | null;
}

/** What an update may change. */
export type QueueChange = Partial<
  Pick<QueueDoc, "description" | "dispatchPaused" | "dispatchPausedAt" | "dispatchPausedNote" | "dispatchPausedBy">
>;

/** Raised when a queue key is already taken in its cluster. */
export class DuplicateQueueError extends Error {
  override name = "DuplicateQueueError";
}

/** Persistence of clusters' queues. */
export interface QueueRepository {
  /** A taken key is a DuplicateQueueError. */
  insertQueue(queue: QueueDoc): Promise<void>;
  findQueue(organizationId: string, clusterId: string, id: string): Promise<QueueDoc | null>;
  /** A cluster's queues by key (at most LIST_LIMIT). */
  listQueues(organizationId: string, clusterId: string): Promise<QueueDoc[]>;
  /** Applies `change` when the queue exists (and, with `paused`, its dispatch is in that state); the queue after, or null. */
  updateQueue(
    organizationId: string,
    clusterId: string,
    id: string,
    change: QueueChange,
    guard?: { paused: boolean },
  ): Promise<QueueDoc | null>;
  /** True when it was there. */
  deleteQueue(organizationId: string, clusterId: string, id: string): Promise<boolean>;
}

/** The most queues a cluster has (one list answers them all). */
export const MAX_QUEUES_PER_CLUSTER = 500;

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoQueueRepository(db: Db): Promise<QueueRepository> {
  const queues: Collection<QueueDoc> = db.collection("cluster_queues");
  await queues.createIndex({ organizationId: 1, clusterId: 1, key: 1 }, { unique: true, name: "cluster_key_unique" });
  return {
    async insertQueue(queue) {
      try {
        await queues.insertOne(queue);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateQueueError(queue.key, { cause: err });
        throw err;
      }
    },
    findQueue: (organizationId, clusterId, id) => queues.findOne({ _id: id, organizationId, clusterId }),
    listQueues: (organizationId, clusterId) =>
      queues
        .find({ organizationId, clusterId })
        .sort({ organizationId: 1, clusterId: 1, key: 1 })
        .limit(MAX_QUEUES_PER_CLUSTER)
        .toArray(),
    updateQueue: (organizationId, clusterId, id, change, guard) =>
      queues.findOneAndUpdate(
        { _id: id, organizationId, clusterId, ...(guard ? { dispatchPaused: guard.paused } : {}) },
        { $set: change },
        { returnDocument: "after" },
      ),
    async deleteQueue(organizationId, clusterId, id) {
      return (await queues.deleteOne({ _id: id, organizationId, clusterId })).deletedCount === 1;
    },
  };
}
