import type { SecretDoc, SecretReadDoc, SecretRepository } from "./secret-repository.js";
import { DuplicateSecretError } from "./secret-repository.js";

/** An in-memory SecretRepository for unit tests; behaves as the MongoDB one does. */
export function createMemorySecretRepository(): SecretRepository & { reads: SecretReadDoc[]; secrets: SecretDoc[] } {
  const secrets: SecretDoc[] = [];
  const reads: SecretReadDoc[] = [];
  const copy = <T>(d: T | undefined): T | null => (d ? structuredClone(d) : null);
  const of = (o: string, c: string) => secrets.filter((s) => s.organizationId === o && s.clusterId === c);
  return {
    secrets,
    reads,
    async insert(secret) {
      if (secrets.some((s) => s.clusterId === secret.clusterId && s.keyLower === secret.keyLower))
        throw new DuplicateSecretError(secret.key);
      secrets.push(structuredClone(secret));
    },
    find: async (o, c, id) => copy(of(o, c).find((s) => s._id === id)),
    findByKey: async (o, c, keyLower) => copy(of(o, c).find((s) => s.keyLower === keyLower)),
    list: async (o, c, limit) =>
      of(o, c)
        .sort((a, b) => a.keyLower.localeCompare(b.keyLower))
        .slice(0, limit)
        .map((s) => structuredClone(s)),
    count: async (o, c) => of(o, c).length,
    async update(o, c, id, change) {
      const found = of(o, c).find((s) => s._id === id);
      if (!found) return null;
      Object.assign(found, structuredClone(change));
      return structuredClone(found);
    },
    async replaceValue(id, keyId, value) {
      const found = secrets.find((s) => s._id === id && s.value.keyId === keyId);
      if (!found) return false;
      found.value = structuredClone(value);
      return true;
    },
    page: async (afterId, limit) =>
      [...secrets]
        .sort((a, b) => (a._id < b._id ? -1 : 1))
        .filter((s) => s._id > afterId)
        .slice(0, limit)
        .map((s) => structuredClone(s)),
    async remove(o, c, id) {
      const i = secrets.findIndex((s) => s._id === id && s.organizationId === o && s.clusterId === c);
      if (i < 0) return false;
      secrets.splice(i, 1);
      for (let j = reads.length - 1; j >= 0; j--) if (reads[j]?.secretId === id) reads.splice(j, 1);
      return true;
    },
    async markRead(id, at) {
      const found = secrets.find((s) => s._id === id);
      if (found) found.lastReadAt = at;
    },
    async insertRead(read) {
      reads.push(structuredClone(read));
    },
    listReads: async (o, secretId, limit) =>
      reads
        .filter((r) => r.organizationId === o && r.secretId === secretId)
        .sort((a, b) => b.readAt.getTime() - a.readAt.getTime())
        .slice(0, limit)
        .map((r) => structuredClone(r)),
    async pruneReads(before) {
      const keep = reads.filter((r) => r.readAt >= before);
      const removed = reads.length - keep.length;
      reads.splice(0, reads.length, ...keep);
      return removed;
    },
  };
}
