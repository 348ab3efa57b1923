import { compileGlob, matchGlob } from "./glob.js";

/** What search needs of an artifact. */
export interface Searchable {
  path: string;
  createdAt: Date;
}

/**
 * A search over artifacts fed oldest first: those whose path matches `query` (a glob; empty matches all) and, unless
 * `includeDuplicates`, only the newest of each path, as the agent expects when a later job uploaded a path again.
 * `add` answers false once more than `limit` artifacts match, so the caller can stop reading.
 */
export function createPathSearch<T extends Searchable>(
  query: string,
  opts: { includeDuplicates: boolean; limit: number },
) {
  const glob = query === "" ? undefined : compileGlob(query);
  const byPath = new Map<string, T>();
  const all: T[] = [];
  const count = () => (opts.includeDuplicates ? all.length : byPath.size);
  return {
    add(a: T): boolean {
      if (glob && !matchGlob(glob, a.path)) return true;
      if (opts.includeDuplicates) all.push(a);
      else {
        const known = byPath.get(a.path);
        if (!known || known.createdAt.getTime() <= a.createdAt.getTime()) byPath.set(a.path, a);
      }
      return count() <= opts.limit;
    },
    /** The matches, and whether more than `limit` matched. */
    result(): { matches: T[]; truncated: boolean } {
      const matches = opts.includeDuplicates ? all : [...byPath.values()];
      return { matches: matches.slice(0, opts.limit), truncated: matches.length > opts.limit };
    },
  };
}
