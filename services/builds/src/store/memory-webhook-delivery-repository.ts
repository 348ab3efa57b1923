import { asStored } from "./memory-document.js";
import type { WebhookDelivery, WebhookDeliveryRepository } from "./webhook-delivery-repository.js";

/** An in-memory WebhookDeliveryRepository for tests (and a builds service in memory): one record per delivery id. */
export function createMemoryWebhookDeliveryRepository(): WebhookDeliveryRepository {
  const deliveries = new Map<string, WebhookDelivery>();
  return {
    async insert(delivery) {
      if (deliveries.has(delivery.id)) return false;
      deliveries.set(delivery.id, asStored(delivery));
      return true;
    },
    async find(id) {
      const found = deliveries.get(id);
      return found ? asStored(found) : null;
    },
    async takeLapsed(now, leaseUntil) {
      for (const delivery of deliveries.values()) {
        if (delivery.doneAt !== null || delivery.leaseUntil >= now) continue;
        delivery.leaseUntil = new Date(leaseUntil.getTime());
        delivery.attempts += 1;
        return asStored(delivery);
      }
      return null;
    },
    async finish(id, outcome, doneAt) {
      const found = deliveries.get(id);
      if (found) deliveries.set(id, asStored({ ...found, outcome, doneAt }));
    },
    async removeDoneBefore(before, limit) {
      let removed = 0;
      for (const [id, delivery] of deliveries) {
        if (removed >= limit) break;
        if (delivery.doneAt && delivery.doneAt < before) {
          deliveries.delete(id);
          removed++;
        }
      }
      return removed;
    },
    async removeOfPipeline(pipelineId) {
      for (const [id, delivery] of deliveries) if (delivery.pipelineId === pipelineId) deliveries.delete(id);
    },
  };
}
