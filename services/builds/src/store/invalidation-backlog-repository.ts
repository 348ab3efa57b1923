import type { Collection, Db } from "mongodb";
import type { Invalidation } from "../reads/read-cache.js";

/**
 * Invalidations NATS could not take, kept until the feed's relay publishes them (cache-invalidation-feed.ts). While
 * one stands, every replica's reads go to the database.
 */
export interface InvalidationBacklog {
  add(entry: BacklogEntry): Promise<void>;
  /** Whether any entry stands (a read looks before it trusts its cache). */
  hasAny(): Promise<boolean>;
  /** The oldest entries, oldest first. */
  oldest(limit: number): Promise<BacklogEntry[]>;
  remove(id: string): Promise<void>;
}

/** One invalidation not yet in the stream. */
export interface BacklogEntry {
  id: string;
  invalidation: Invalidation;
  at: Date;
}

/**
 * How an entry is stored. The collection and the field predate the word "invalidation" (a change was a "touch"):
 * stacks running now hold entries under these names, so they stay.
 */
export interface InvalidationBacklogDoc {
  _id: string;
  touch: Invalidation;
  at: Date;
}
export const INVALIDATION_BACKLOG_COLLECTION = "build_touch_backlog";

/** The MongoDB implementation; creates its index before returning. */
export async function createMongoInvalidationBacklog(db: Db): Promise<InvalidationBacklog> {
  const backlog: Collection<InvalidationBacklogDoc> = db.collection(INVALIDATION_BACKLOG_COLLECTION);
  await backlog.createIndex({ at: 1 }, { name: "at" });
  return {
    async add({ id, invalidation, at }) {
      await backlog.insertOne({ _id: id, touch: invalidation, at });
    },
    hasAny: async () => (await backlog.findOne({}, { projection: { _id: 1 } })) !== null,
    async oldest(limit) {
      const docs = await backlog.find({}).sort({ at: 1 }).limit(limit).toArray();
      return docs.map((d) => ({ id: d._id, invalidation: d.touch, at: d.at }));
    },
    async remove(id) {
      await backlog.deleteOne({ _id: id });
    },
  };
}
