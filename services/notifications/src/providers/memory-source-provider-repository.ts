import type { SourceProviderDoc, SourceProviderRepository } from "./source-provider-repository.js";

/** The in-memory repository of unit tests. */
export function createMemorySourceProviderRepository(): SourceProviderRepository & {
  docs: Map<string, SourceProviderDoc>;
} {
  const docs = new Map<string, SourceProviderDoc>();
  const copy = (d: SourceProviderDoc): SourceProviderDoc => structuredClone(d);
  const ofOrg = (organizationId: string) =>
    [...docs.values()]
      .filter((d) => d.organizationId === organizationId)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id));
  return {
    docs,
    async insert(doc) {
      if (docs.has(doc._id)) throw new Error(`duplicate key ${doc._id}`);
      docs.set(doc._id, copy(doc));
    },
    list: async (organizationId) => ofOrg(organizationId).map(copy),
    count: async (organizationId) => ofOrg(organizationId).length,
    async get(organizationId, id) {
      const d = docs.get(id);
      return d && d.organizationId === organizationId ? copy(d) : null;
    },
    async remove(organizationId, id) {
      const d = docs.get(id);
      if (!d || d.organizationId !== organizationId) return false;
      docs.delete(id);
      return true;
    },
    sealedWithOtherKey: async (keyId, limit) =>
      [...docs.values()]
        .filter((d) => d.credential.keyId !== keyId)
        .slice(0, limit)
        .map(copy),
    async replaceCredential(id, previousKeyId, credential) {
      const d = docs.get(id);
      if (!d || d.credential.keyId !== previousKeyId) return false;
      docs.set(id, { ...d, credential: { ...credential } });
      return true;
    },
  };
}
