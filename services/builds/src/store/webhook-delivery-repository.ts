import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import type { DeliveryOutcome, DeliveryPlan } from "../domain/webhook-plan.js";

/**
 * A webhook delivery as the inbox records it before answering (webhooks/webhook-inbox.ts): what it comes to, who may
 * carry that out until when, and, once done, what was done. Its id (domain/webhook-plan.ts deliveryKey) makes a
 * redelivery find it.
 */
export interface WebhookDelivery {
  id: string;
  pipelineId: string;
  organizationId: string;
  organizationSlug: string;
  forge: string;
  event: string;
  receivedAt: Date;
  plan: DeliveryPlan;
  /** Until then the process that took it carries it out; after, the relay may take it. */
  leaseUntil: Date;
  /** How many times it was taken. */
  attempts: number;
  doneAt: Date | null;
  outcome: DeliveryOutcome | null;
}

/** Persistence of webhook deliveries. */
export interface WebhookDeliveryRepository {
  /** Records a delivery; false when one with its id is recorded already. */
  insert(delivery: WebhookDelivery): Promise<boolean>;
  find(id: string): Promise<WebhookDelivery | null>;
  /**
   * Takes a delivery not done whose lease lapsed before `now`, holding it until `leaseUntil` (a compare-and-set on
   * the lease, so one process takes it); null when there is none.
   */
  takeLapsed(now: Date, leaseUntil: Date): Promise<WebhookDelivery | null>;
  /** Records a delivery done, with what was done. */
  finish(id: string, outcome: DeliveryOutcome, doneAt: Date): Promise<void>;
  /** Removes deliveries done before `before` (a redelivery after that is taken as a new delivery); how many. */
  removeDoneBefore(before: Date, limit: number): Promise<number>;
  /** Removes a deleted pipeline's deliveries. */
  removeOfPipeline(pipelineId: string): Promise<void>;
}

/** How a delivery is stored: its plan and outcome as JSON text (they hold forge text, labels and env names). */
type DeliveryDoc = Omit<WebhookDelivery, "id" | "plan" | "outcome"> & {
  _id: string;
  planJson: string;
  outcomeJson: string | null;
};

const toDoc = ({ id, plan, outcome, ...rest }: WebhookDelivery): DeliveryDoc => ({
  ...rest,
  _id: id,
  planJson: JSON.stringify(plan),
  outcomeJson: outcome ? JSON.stringify(outcome) : null,
});

const fromDoc = ({ _id, planJson, outcomeJson, ...rest }: DeliveryDoc): WebhookDelivery => ({
  ...rest,
  id: _id,
  plan: JSON.parse(planJson) as DeliveryPlan,
  outcome: outcomeJson ? (JSON.parse(outcomeJson) as DeliveryOutcome) : null,
});

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoWebhookDeliveryRepository(db: Db): Promise<WebhookDeliveryRepository> {
  const deliveries: Collection<DeliveryDoc> = db.collection("webhook_deliveries");
  await Promise.all([
    // The relay's work (not done, lease lapsed) and the retention sweep's (done long ago).
    deliveries.createIndex({ doneAt: 1, leaseUntil: 1 }, { name: "done_lease" }),
    deliveries.createIndex({ pipelineId: 1 }, { name: "pipeline_deliveries" }),
  ]);
  return {
    async insert(delivery) {
      try {
        await deliveries.insertOne(toDoc(delivery));
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async find(id) {
      const doc = await deliveries.findOne({ _id: id });
      return doc ? fromDoc(doc) : null;
    },
    async takeLapsed(now, leaseUntil) {
      const doc = await deliveries.findOneAndUpdate(
        { doneAt: null, leaseUntil: { $lt: now } },
        { $set: { leaseUntil }, $inc: { attempts: 1 } },
        { returnDocument: "after" },
      );
      return doc ? fromDoc(doc) : null;
    },
    async finish(id, outcome, doneAt) {
      await deliveries.updateOne({ _id: id }, { $set: { doneAt, outcomeJson: JSON.stringify(outcome) } });
    },
    async removeDoneBefore(before, limit) {
      const ids = (
        await deliveries
          .find({ doneAt: { $ne: null, $lt: before } }, { projection: { _id: 1 } })
          .limit(limit)
          .toArray()
      ).map((d) => d._id);
      if (ids.length === 0) return 0;
      return (await deliveries.deleteMany({ _id: { $in: ids } })).deletedCount;
    },
    async removeOfPipeline(pipelineId) {
      await deliveries.deleteMany({ pipelineId });
    },
  };
}
