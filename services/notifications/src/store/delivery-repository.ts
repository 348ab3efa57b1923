import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/** One attempt of a delivery, as recorded. */
export interface AttemptRecord {
  at: Date;
  responseCode: number;
  error: string;
  durationMs: number;
}

export type DeliveryStatus = "pending" | "succeeded" | "failed";

/**
 * A delivery: one message to one target (a webhook's URL, a Slack URL, email recipients, a forge's status API),
 * made from one event before the event is acknowledged, and sent by the dispatcher (docs/notifications.md).
 */
export interface DeliveryDoc {
  /** Derived from the event and the target, so a redelivered event makes nothing new; sent as the delivery id. */
  _id: string;
  organizationId: string;
  /** The channel that sends it (channels.ts). */
  kind: string;
  /** Buildkite's event name (build.finished, ping, …). */
  event: string;
  /** The organization webhook it is for; "" for other targets. */
  webhookId: string;
  /** The host it is sent to, for the per-host bound; "" when none (email). */
  host: string;
  /** Deliveries with the same key are sent one at a time in `seq` order; "" when order does not matter. */
  orderKey: string;
  /** The event's stream sequence (0 for deliveries made by a request, such as ping). */
  seq: number;
  /** What the channel needs to send it (URL, headers' inputs, body…), as plain JSON. */
  request: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  /** The attempts made, oldest first (at most the retry policy's attempts). */
  attemptLog: AttemptRecord[];
  createdAt: Date;
  nextAttemptAt: Date;
  /** No attempt is made after this. */
  giveUpAt: Date;
  /** A replica sending it holds it until then (a claim by compare-and-set); the epoch when nobody does. */
  leaseUntil: Date;
  leaseOwner: string;
  lastAttemptAt: Date | null;
  responseCode: number;
  error: string;
  durationMs: number;
  finishedAt: Date | null;
}

/** What becomes of a delivery after an attempt. */
export type AttemptResult =
  | { status: "succeeded" | "failed"; at: Date }
  | { status: "pending"; at: Date; nextAttemptAt: Date };

export const LEASE_FREE = new Date(0);

/** Persistence of deliveries. Every change is conditioned on the state it read (several replicas dispatch). */
export interface DeliveryRepository {
  /** Stores a new delivery; false when one with its id exists (a redelivered event). */
  insert(doc: DeliveryDoc): Promise<boolean>;
  /** Pending deliveries due at `now` that nobody holds, the most overdue first. */
  due(now: Date, limit: number): Promise<DeliveryDoc[]>;
  /** How many of an organization's deliveries are pending (counted up to `limit`). */
  pendingCount(organizationId: string, limit: number): Promise<number>;
  /** Whether a pending delivery with the same order key and an earlier sequence exists. */
  hasEarlierPending(orderKey: string, seq: number): Promise<boolean>;
  /** Takes a due delivery nobody holds, until `leaseUntil`; null when another replica took it first. */
  claim(id: string, owner: string, now: Date, leaseUntil: Date): Promise<DeliveryDoc | null>;
  /** Records an attempt made under `owner`'s claim and lets go of it; false when the claim was lost. */
  record(id: string, owner: string, attempt: AttemptRecord, result: AttemptResult): Promise<boolean>;
  /** A webhook's latest deliveries, newest first. */
  listForWebhook(webhookId: string, limit: number): Promise<DeliveryDoc[]>;
  /** Removes a webhook's deliveries. */
  removeForWebhook(webhookId: string): Promise<void>;
  /** Removes up to `limit` deliveries finished before `before`; returns how many. */
  removeFinishedBefore(before: Date, limit: number): Promise<number>;
}

/** The update an attempt makes (shared by the MongoDB and in-memory repositories). */
export function attemptUpdate(attempt: AttemptRecord, result: AttemptResult) {
  return {
    status: result.status,
    lastAttemptAt: attempt.at,
    responseCode: attempt.responseCode,
    error: attempt.error,
    durationMs: attempt.durationMs,
    leaseUntil: LEASE_FREE,
    leaseOwner: "",
    ...(result.status === "pending"
      ? { nextAttemptAt: result.nextAttemptAt }
      : { finishedAt: result.at, nextAttemptAt: result.at }),
  };
}

export async function createMongoDeliveryRepository(db: Db): Promise<DeliveryRepository> {
  const col: Collection<DeliveryDoc> = db.collection("deliveries");
  await Promise.all([
    col.createIndex({ status: 1, nextAttemptAt: 1 }),
    col.createIndex({ orderKey: 1, seq: 1 }),
    col.createIndex({ webhookId: 1, createdAt: -1 }),
    col.createIndex({ finishedAt: 1 }),
    col.createIndex({ organizationId: 1, status: 1 }),
  ]);
  return {
    async insert(doc) {
      try {
        await col.insertOne(doc);
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    due: (now, limit) =>
      col
        .find({ status: "pending", nextAttemptAt: { $lte: now }, leaseUntil: { $lt: now } })
        .sort({ nextAttemptAt: 1 })
        .limit(limit)
        .toArray(),
    pendingCount: (organizationId, limit) => col.countDocuments({ organizationId, status: "pending" }, { limit }),
    async hasEarlierPending(orderKey, seq) {
      return (
        (await col.findOne({ orderKey, seq: { $lt: seq }, status: "pending" }, { projection: { _id: 1 } })) !== null
      );
    },
    claim: (id, owner, now, leaseUntil) =>
      col.findOneAndUpdate(
        { _id: id, status: "pending", nextAttemptAt: { $lte: now }, leaseUntil: { $lt: now } },
        { $set: { leaseUntil, leaseOwner: owner } },
        { returnDocument: "after" },
      ),
    async record(id, owner, attempt, result) {
      const r = await col.updateOne(
        { _id: id, leaseOwner: owner, status: "pending" },
        { $set: attemptUpdate(attempt, result), $inc: { attempts: 1 }, $push: { attemptLog: attempt } },
      );
      return r.modifiedCount === 1;
    },
    listForWebhook: (webhookId, limit) => col.find({ webhookId }).sort({ createdAt: -1 }).limit(limit).toArray(),
    async removeForWebhook(webhookId) {
      await col.deleteMany({ webhookId });
    },
    async removeFinishedBefore(before, limit) {
      const old = await col
        .find({ finishedAt: { $ne: null, $lt: before } }, { projection: { _id: 1 } })
        .limit(limit)
        .toArray();
      if (old.length === 0) return 0;
      const r = await col.deleteMany({ _id: { $in: old.map((d) => d._id) } });
      return r.deletedCount;
    },
  };
}
