import type { Annotation } from "../domain/annotations.js";
import type { AnnotationRepository } from "./annotation-repository.js";

/** An in-memory AnnotationRepository for unit tests, with the Mongo implementation's uniqueness and order. */
export function createMemoryAnnotationRepository(): AnnotationRepository & { all(): Annotation[] } {
  const rows = new Map<string, Annotation>();
  const same = (a: Annotation, buildId: string, jobId: string | null, context?: string) =>
    a.buildId === buildId && a.jobId === jobId && (context === undefined || a.context === context);

  return {
    all: () => [...rows.values()].map((a) => ({ ...a })),
    async find(buildId, jobId, context) {
      const found = [...rows.values()].find((a) => same(a, buildId, jobId, context));
      return found ? { ...found } : null;
    },
    async findById(id) {
      const found = rows.get(id);
      return found ? { ...found } : null;
    },
    async insert(annotation) {
      const taken = [...rows.values()].some((a) => same(a, annotation.buildId, annotation.jobId, annotation.context));
      if (taken) return false;
      rows.set(annotation.id, { ...annotation });
      return true;
    },
    async update(id, version, content, updatedAt) {
      const current = rows.get(id);
      if (!current || current.version !== version) return null;
      const { style, priority, body, bodyHtml } = content;
      const updated = { ...current, style, priority, body, bodyHtml, updatedAt, version: version + 1 };
      rows.set(id, updated);
      return { ...updated };
    },
    async remove(buildId, jobId, context) {
      const found = [...rows.values()].find((a) => same(a, buildId, jobId, context));
      return found ? rows.delete(found.id) : false;
    },
    async removeOfBuilds(buildIds) {
      for (const a of [...rows.values()]) if (buildIds.includes(a.buildId)) rows.delete(a.id);
    },
    async count(buildId) {
      return [...rows.values()].filter((a) => a.buildId === buildId).length;
    },
    async countOf(buildId, jobId) {
      return [...rows.values()].filter((a) => same(a, buildId, jobId)).length;
    },
    async list(buildId, jobId, skip, limit) {
      return [...rows.values()]
        .filter((a) => same(a, buildId, jobId))
        .sort(
          (a, b) =>
            b.priority - a.priority ||
            a.createdAt.getTime() - b.createdAt.getTime() ||
            (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
        )
        .slice(skip, skip + limit)
        .map((a) => ({ ...a }));
    },
  };
}
