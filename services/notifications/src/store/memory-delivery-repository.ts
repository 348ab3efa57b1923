import { attemptUpdate, type DeliveryDoc, type DeliveryRepository } from "./delivery-repository.js";

/** The delivery repository in memory, for unit tests; held to the MongoDB one's behaviour. */
export function createMemoryDeliveryRepository(): DeliveryRepository & { docs: Map<string, DeliveryDoc> } {
  const docs = new Map<string, DeliveryDoc>();
  const copy = (d: DeliveryDoc): DeliveryDoc => structuredClone(d);
  return {
    docs,
    async insert(doc) {
      if (docs.has(doc._id)) return false;
      docs.set(doc._id, copy(doc));
      return true;
    },
    async due(now, limit) {
      return [...docs.values()]
        .filter((d) => d.status === "pending" && d.nextAttemptAt <= now && d.leaseUntil < now)
        .sort((a, b) => a.nextAttemptAt.getTime() - b.nextAttemptAt.getTime())
        .slice(0, limit)
        .map(copy);
    },
    async pendingCount(organizationId, limit) {
      const n = [...docs.values()].filter((d) => d.organizationId === organizationId && d.status === "pending").length;
      return Math.min(n, limit);
    },
    async hasEarlierPending(orderKey, seq) {
      return [...docs.values()].some((d) => d.orderKey === orderKey && d.seq < seq && d.status === "pending");
    },
    async claim(id, owner, now, leaseUntil) {
      const d = docs.get(id);
      if (d?.status !== "pending" || d.nextAttemptAt > now || d.leaseUntil >= now) return null;
      d.leaseUntil = leaseUntil;
      d.leaseOwner = owner;
      return copy(d);
    },
    async record(id, owner, attempt, result) {
      const d = docs.get(id);
      if (!d || d.leaseOwner !== owner || d.status !== "pending") return false;
      Object.assign(d, attemptUpdate(attempt, result));
      d.attempts += 1;
      d.attemptLog.push({ ...attempt });
      return true;
    },
    async listForWebhook(webhookId, limit) {
      return [...docs.values()]
        .filter((d) => d.webhookId === webhookId)
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
        .slice(0, limit)
        .map(copy);
    },
    async removeForWebhook(webhookId) {
      for (const [id, d] of docs) if (d.webhookId === webhookId) docs.delete(id);
    },
    async removeFinishedBefore(before, limit) {
      let n = 0;
      for (const [id, d] of docs) {
        if (n >= limit) break;
        if (d.finishedAt && d.finishedAt < before) {
          docs.delete(id);
          n++;
        }
      }
      return n;
    },
  };
}
