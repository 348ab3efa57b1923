import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/** An organization's notification webhook (docs/notifications.md#organization-webhooks). */
export interface WebhookDoc {
  _id: string;
  organizationId: string;
  url: string;
  events: string[];
  /** Only these pipelines' builds and jobs; empty for all. */
  pipelineIds: string[];
  tokenMode: "token" | "signature";
  /** The token (or signing secret). Never answered after creation (docs/security.md#notification-secrets). */
  token: string;
  description: string;
  createdAt: Date;
  createdBy: string;
}

export type WebhookChanges = Partial<Pick<WebhookDoc, "url" | "events" | "pipelineIds" | "tokenMode" | "description">>;

/** Persistence of webhooks, with a bound on how many one organization has. */
export interface WebhookRepository {
  /** Stores a webhook unless its organization has `max` already; false when refused. */
  insert(doc: WebhookDoc, max: number): Promise<boolean>;
  list(organizationId: string): Promise<WebhookDoc[]>;
  get(organizationId: string, id: string): Promise<WebhookDoc | null>;
  update(organizationId: string, id: string, changes: WebhookChanges): Promise<WebhookDoc | null>;
  /** Removes a webhook; false when there was none. */
  remove(organizationId: string, id: string): Promise<boolean>;
}

interface CountDoc {
  _id: string;
  count: number;
}

export async function createMongoWebhookRepository(db: Db): Promise<WebhookRepository> {
  const col: Collection<WebhookDoc> = db.collection("webhooks");
  // One document per organization counting its webhooks: a create takes a place by a conditional $inc, so
  // concurrent creates on several replicas never pass the bound.
  const counts: Collection<CountDoc> = db.collection("webhook_counts");
  await col.createIndex({ organizationId: 1, createdAt: 1 });
  const release = (organizationId: string) => counts.updateOne({ _id: organizationId }, { $inc: { count: -1 } });
  return {
    async insert(doc, max) {
      try {
        const r = await counts.updateOne(
          { _id: doc.organizationId, count: { $lt: max } },
          { $inc: { count: 1 } },
          { upsert: true },
        );
        if (r.modifiedCount + r.upsertedCount === 0) return false;
      } catch (err) {
        // The upsert met the organization's document at the bound.
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
      try {
        await col.insertOne(doc);
      } catch (err) {
        await release(doc.organizationId);
        throw err;
      }
      return true;
    },
    list: (organizationId) => col.find({ organizationId }).sort({ createdAt: 1, _id: 1 }).toArray(),
    get: (organizationId, id) => col.findOne({ _id: id, organizationId }),
    update: (organizationId, id, changes) =>
      col.findOneAndUpdate({ _id: id, organizationId }, { $set: changes }, { returnDocument: "after" }),
    async remove(organizationId, id) {
      const r = await col.deleteOne({ _id: id, organizationId });
      if (r.deletedCount === 0) return false;
      await release(organizationId);
      return true;
    },
  };
}
