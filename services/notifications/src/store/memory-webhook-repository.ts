import type { WebhookDoc, WebhookRepository } from "./webhook-repository.js";

/** The webhook repository in memory, for unit tests. */
export function createMemoryWebhookRepository(): WebhookRepository & { docs: Map<string, WebhookDoc> } {
  const docs = new Map<string, WebhookDoc>();
  const of = (org: string) => [...docs.values()].filter((d) => d.organizationId === org);
  return {
    docs,
    async insert(doc, max) {
      if (of(doc.organizationId).length >= max) return false;
      docs.set(doc._id, structuredClone(doc));
      return true;
    },
    async list(organizationId) {
      return of(organizationId)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
        .map((d) => structuredClone(d));
    },
    async get(organizationId, id) {
      const d = docs.get(id);
      return d && d.organizationId === organizationId ? structuredClone(d) : null;
    },
    async update(organizationId, id, changes) {
      const d = docs.get(id);
      if (!d || d.organizationId !== organizationId) return null;
      Object.assign(d, structuredClone(changes));
      return structuredClone(d);
    },
    async remove(organizationId, id) {
      const d = docs.get(id);
      if (!d || d.organizationId !== organizationId) return false;
      docs.delete(id);
      return true;
    },
  };
}
