import { transition } from "../domain/artifact-state.js";
import type { ArtifactDoc, ArtifactFilter, ArtifactRepository } from "./artifact-repository.js";

const copy = <T>(v: T): T => structuredClone(v);

function matches(doc: ArtifactDoc, f: ArtifactFilter): boolean {
  if (doc.buildId !== f.buildId) return false;
  if (f.jobId && doc.jobId !== f.jobId) return false;
  if (f.jobIds && f.jobIds.length > 0 && !f.jobIds.includes(doc.jobId)) return false;
  if (f.excludeJobIds?.includes(doc.jobId)) return false;
  return f.state && f.state !== "deleted" ? doc.state === f.state : doc.state !== "deleted";
}

const byAge = (a: ArtifactDoc, b: ArtifactDoc) =>
  a.createdAt.getTime() - b.createdAt.getTime() ||
  a.position - b.position ||
  (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/** An in-memory ArtifactRepository with the MongoDB one's behaviour, for unit tests. */
export function createMemoryArtifactRepository() {
  const docs = new Map<string, ArtifactDoc>();
  const quotas = new Map<string, number>();
  const retention = new Map<string, number>();
  const repo: ArtifactRepository = {
    async insertMany(list) {
      for (const d of list) if (!docs.has(d._id)) docs.set(d._id, copy(d));
    },
    findByIds: async (ids) => ids.flatMap((id) => (docs.has(id) ? [copy(docs.get(id) as ArtifactDoc)] : [])),
    async reserveQuota(key, n, limit) {
      const count = quotas.get(key) ?? 0;
      if (count + n > limit) return false;
      quotas.set(key, count + n);
      return true;
    },
    async releaseQuota(key, n) {
      const count = quotas.get(key) ?? 0;
      if (count >= n) quotas.set(key, count - n);
    },
    async transition(ids, from, to, set, jobId) {
      let moved = 0;
      for (const id of ids) {
        const d = docs.get(id);
        if (!d || !from.includes(d.state) || (jobId && d.jobId !== jobId)) continue;
        Object.assign(d, { state: to, ...set });
        moved += 1;
      }
      return moved;
    },
    async finishUploads(uploads, at, jobId) {
      const { from, to } = transition("upload_finished");
      let moved = 0;
      for (const u of uploads) {
        const d = docs.get(u.id);
        if (!d || !from.includes(d.state) || d.jobId !== jobId) continue;
        Object.assign(d, { state: to, uploadedAt: at, etag: u.etag });
        moved += 1;
      }
      return moved;
    },
    async requireRemoval(ids) {
      for (const id of ids) {
        const d = docs.get(id);
        if (d) d.objectRemoved = false;
      }
    },
    async list(filter, skip, limit) {
      const all = [...docs.values()].filter((d) => matches(d, filter)).sort(byAge);
      return { items: all.slice(skip, skip + limit).map(copy), total: all.length };
    },
    async *scan(filter) {
      for (const d of [...docs.values()].filter((x) => matches(x, filter)).sort(byAge)) yield copy(d);
    },
    find: async (buildId, jobId, id) => {
      const d = docs.get(id);
      return d && d.buildId === buildId && d.jobId === jobId && d.state !== "deleted" ? copy(d) : null;
    },
    anyOfBuild: async (buildId) => copy([...docs.values()].find((d) => d.buildId === buildId) ?? null),
    async findOld(states, before, orgs, limit) {
      return [...docs.values()]
        .filter(
          (d) =>
            states.includes(d.state) &&
            d.createdAt < before &&
            ("in" in orgs ? orgs.in.includes(d.organizationId) : !orgs.notIn.includes(d.organizationId)),
        )
        .slice(0, limit)
        .map(copy);
    },
    findUnremoved: async (limit) =>
      [...docs.values()]
        .filter((d) => !d.objectRemoved && ["error", "deleted", "expired"].includes(d.state))
        .slice(0, limit)
        .map(copy),
    async markRemoved(ids) {
      for (const id of ids) {
        const d = docs.get(id);
        if (d) d.objectRemoved = true;
      }
    },
    getRetention: async (organizationId) => retention.get(organizationId) ?? null,
    async setRetention(organizationId, days) {
      if (days === null) retention.delete(organizationId);
      else retention.set(organizationId, days);
    },
    listRetentions: async () => [...retention].map(([organizationId, days]) => ({ organizationId, days })),
  };
  return { repo, docs };
}
