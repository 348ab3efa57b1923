import type { BacklogEntry, InvalidationBacklog } from "./invalidation-backlog-repository.js";

/** An in-memory invalidation backlog for unit tests; `failing` makes its writes or reads reject. */
export function createMemoryInvalidationBacklog(): InvalidationBacklog & {
  entries: Map<string, BacklogEntry>;
  failing: { add?: Error; read?: Error };
} {
  const entries = new Map<string, BacklogEntry>();
  const failing: { add?: Error; read?: Error } = {};
  const readable = () => {
    if (failing.read) throw failing.read;
  };
  return {
    entries,
    failing,
    async add(entry) {
      if (failing.add) throw failing.add;
      entries.set(entry.id, entry);
    },
    async hasAny() {
      readable();
      return entries.size > 0;
    },
    async oldest(limit) {
      readable();
      return [...entries.values()].sort((a, b) => a.at.getTime() - b.at.getTime()).slice(0, limit);
    },
    async remove(id) {
      entries.delete(id);
    },
  };
}
