import { createHash } from "node:crypto";
import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/**
 * The last status sent for one commit and context (collection `commit_status_marks`; docs/statuses.md#order): a
 * status whose order is not above its mark's is stale and is not sent, so a late `pending` never overwrites a final
 * state, whatever the order in which deliveries were retried.
 */
export interface StatusMarkDoc {
  /** statusMarkId of the forge's host, the repository, the commit and the context. */
  _id: string;
  /** The status's order (compareStatusOrder), each part zero-padded so that text order is numeric order. */
  order: string;
  state: string;
  at: Date;
}

export interface StatusMarkRepository {
  /** The order last sent for a mark, or null. */
  orderOf(id: string): Promise<string | null>;
  /** Raises a mark to `order` unless it is already at or above it; false when it was. */
  raise(id: string, order: string, state: string, at: Date): Promise<boolean>;
  /** Removes marks last raised before `before` (up to `limit`); returns how many. */
  removeOlderThan(before: Date, limit: number): Promise<number>;
}

/** The mark's id of a status: a hash, so that long contexts and paths fit any key. */
export function statusMarkId(host: string, repositoryPath: string, sha: string, context: string): string {
  return createHash("sha256")
    .update([host.toLowerCase(), repositoryPath.toLowerCase(), sha.toLowerCase(), context].join("\0"))
    .digest("hex");
}

/** An order as stored: every part as 15 zero-padded digits (orders are non-negative integers below 10^15). */
export function orderText(order: readonly number[]): string {
  return order
    .map((n) =>
      Math.max(0, Math.min(Math.floor(n), 999_999_999_999_999))
        .toString()
        .padStart(15, "0"),
    )
    .join(".");
}

export async function createMongoStatusMarkRepository(db: Db): Promise<StatusMarkRepository> {
  const col: Collection<StatusMarkDoc> = db.collection("commit_status_marks");
  await col.createIndex({ at: 1 });
  return {
    async orderOf(id) {
      return (await col.findOne({ _id: id }, { projection: { order: 1 } }))?.order ?? null;
    },
    async raise(id, order, state, at) {
      try {
        const r = await col.updateOne(
          { _id: id, order: { $lt: order } },
          { $set: { order, state, at } },
          { upsert: true },
        );
        return r.modifiedCount + r.upsertedCount === 1;
      } catch (err) {
        // The mark exists at or above `order`: the upsert's insert collided with it.
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async removeOlderThan(before, limit) {
      const old = await col
        .find({ at: { $lt: before } }, { projection: { _id: 1 } })
        .limit(limit)
        .toArray();
      if (old.length === 0) return 0;
      return (await col.deleteMany({ _id: { $in: old.map((d) => d._id) }, at: { $lt: before } })).deletedCount;
    },
  };
}
