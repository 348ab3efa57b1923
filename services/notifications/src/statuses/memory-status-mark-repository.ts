import type { StatusMarkDoc, StatusMarkRepository } from "./status-mark-repository.js";

/** The in-memory marks of unit tests. */
export function createMemoryStatusMarkRepository(): StatusMarkRepository & { marks: Map<string, StatusMarkDoc> } {
  const marks = new Map<string, StatusMarkDoc>();
  return {
    marks,
    orderOf: async (id) => marks.get(id)?.order ?? null,
    async raise(id, order, state, at) {
      const mark = marks.get(id);
      if (mark && mark.order >= order) return false;
      marks.set(id, { _id: id, order, state, at });
      return true;
    },
    async removeOlderThan(before, limit) {
      let n = 0;
      for (const [id, mark] of marks) {
        if (n >= limit) break;
        if (mark.at < before) {
          marks.delete(id);
          n++;
        }
      }
      return n;
    },
  };
}
