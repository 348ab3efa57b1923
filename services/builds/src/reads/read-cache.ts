/**
 * What the builds service's read path keeps of builds, their jobs and build lists, and the rule that decides when a
 * kept answer may be served. Pure (no I/O): the cache invalidation feed (cache-invalidation-feed.ts) hands it the
 * invalidations of the changes every replica makes, and build-reads.ts serves from it only after a barrier proved every
 * acknowledged change has been applied here.
 *
 * Freshness is tracked by generations: every invalidation takes the next number of a counter and stamps the
 * build and the scopes (its pipeline and organization) it changed. A read takes a ticket (the counter) before it
 * asks the database and may keep what it read only if nothing it covers was stamped after the ticket: a change that
 * raced the read is never hidden behind an older answer.
 */
import { LRUCache } from "lru-cache";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";

/** What one write changed: builds (by id) and the pipelines and organizations whose build lists it may change. */
export interface Invalidation {
  builds: readonly string[];
  /** Builds whose jobs changed (not the builds themselves). */
  jobsOf?: readonly string[];
  pipelines: readonly string[];
  organizations: readonly string[];
  /** Every list may have changed (builds removed by id only). */
  allLists?: boolean;
  /** Anything may have changed (a write that failed, on a job whose build cannot be told): everything goes. */
  everything?: boolean;
}

/** One invalidation saying everything the given ones say (published together, cache-invalidation-feed.ts). */
export function mergeInvalidations(list: readonly Invalidation[]): Invalidation {
  if (list.length === 1) return list[0] as Invalidation;
  const union = (of: (t: Invalidation) => readonly string[] | undefined) => [
    ...new Set(list.flatMap((t) => of(t) ?? [])),
  ];
  const merged: Invalidation = {
    builds: union((t) => t.builds),
    pipelines: union((t) => t.pipelines),
    organizations: union((t) => t.organizations),
  };
  const jobsOf = union((t) => t.jobsOf);
  if (jobsOf.length > 0) merged.jobsOf = jobsOf;
  if (list.some((t) => t.allLists)) merged.allLists = true;
  if (list.some((t) => t.everything)) merged.everything = true;
  return merged;
}

/** A build as kept: its jobs when a read asked for them. */
export interface KeptBuild {
  build: Build;
  jobs?: readonly Job[];
}

/** A kept list: the ids of one page (and one more, when the query asked for it), and the scopes it depends on. */
interface KeptList {
  ids: readonly string[];
  scopes: readonly string[];
  ticket: number;
}

export interface ReadCacheOptions {
  /** Builds kept at most (each with its jobs, a few KB). */
  maxBuilds?: number;
  /** Lists kept at most. */
  maxLists?: number;
  /** The backstop: nothing is served that was read longer ago than this. */
  ttlMs?: number;
  /** Stamps kept before they are folded into a floor (bounds memory under many distinct builds). */
  maxStamps?: number;
}

const LISTS = "lists:*";
const buildKey = (id: string) => `b:${id}`;
const jobsKey = (id: string) => `j:${id}`;
const pipelineKey = (id: string) => `p:${id}`;
const organizationKey = (id: string) => `o:${id}`;

/** The scopes a list query depends on: its organizations and pipelines. */
export function listScopes(q: {
  organizationIds: readonly string[];
  pipelineIds?: readonly string[];
  pipelineId?: string;
}): string[] {
  return [
    LISTS,
    ...q.organizationIds.map(organizationKey),
    ...(q.pipelineIds ?? []).map(pipelineKey),
    ...(q.pipelineId ? [pipelineKey(q.pipelineId)] : []),
  ];
}

/** Creates an empty read cache (see the file's comment for the rule it keeps). */
export function createReadCache(opts: ReadCacheOptions = {}) {
  const ttl = opts.ttlMs ?? 30_000;
  /** (pipeline, number) → build id: never changes for a build, so it goes only with the build. */
  const idByNumber = new Map<string, string>();
  const numberKey = (pipelineId: string, number: number) => `${pipelineId}:${number}`;
  const builds = new LRUCache<string, KeptBuild>({
    max: opts.maxBuilds ?? 5_000,
    ttl,
    // A build's (pipeline, number) never changes: replacing what is kept of it keeps its number's entry.
    noDisposeOnSet: true,
    dispose: (kept) => idByNumber.delete(numberKey(kept.build.pipelineId, kept.build.number)),
  });
  const lists = new LRUCache<string, KeptList>({ max: opts.maxLists ?? 2_000, ttl });
  const maxStamps = opts.maxStamps ?? 100_000;
  let counter = 0;
  /** Generation of keys with no stamp of their own (raised when stamps are folded or everything is dropped). */
  let floor = 0;
  const stamps = new Map<string, number>();

  const stampOf = (key: string) => stamps.get(key) ?? floor;
  const stamp = (key: string, at: number) => {
    stamps.delete(key);
    stamps.set(key, at);
  };

  /** Drops everything: what was kept can no longer be proved current (a gap in the invalidations, a lost connection). */
  const clear = () => {
    counter++;
    floor = counter;
    stamps.clear();
    builds.clear();
    lists.clear();
  };

  return {
    /** The generation a read records before it asks the database. */
    ticket: () => counter,

    /** Applies an invalidation: what it names is dropped and stamped, so that no read begun before it keeps its answer. */
    invalidate(t: Invalidation) {
      if (t.everything) return clear();
      const at = ++counter;
      for (const id of t.builds) {
        builds.delete(id);
        stamp(buildKey(id), at);
      }
      for (const id of t.jobsOf ?? []) {
        const kept = builds.get(id);
        if (kept?.jobs) builds.set(id, { build: kept.build });
        stamp(jobsKey(id), at);
      }
      for (const id of t.pipelines) stamp(pipelineKey(id), at);
      for (const id of t.organizations) stamp(organizationKey(id), at);
      // Lists are checked against their scopes' stamps when read; a change of every list stamps them all.
      if (t.allLists) stamp(LISTS, at);
      if (stamps.size > maxStamps) {
        // Folding every stamp into the floor makes every older ticket fail its check: safe, and rare.
        floor = at;
        stamps.clear();
      }
    },

    clear,

    /** A kept build (with its jobs when `withJobs`), by pipeline and number. */
    byNumber(pipelineId: string, number: number, withJobs: boolean): KeptBuild | undefined {
      const id = idByNumber.get(numberKey(pipelineId, number));
      const kept = id ? builds.get(id) : undefined;
      return kept && (!withJobs || kept.jobs) ? kept : undefined;
    },

    /** A kept build by id. */
    byId: (id: string): KeptBuild | undefined => builds.get(id),

    /** Keeps a build read with ticket `ticket` (and its jobs, when read with it), unless it changed since. */
    keepBuild(ticket: number, build: Build, jobs?: readonly Job[]) {
      if (stampOf(buildKey(build.id)) > ticket) return;
      // Jobs kept already are current (a change of them drops them); jobs read with the build, if none changed since.
      const current = jobs && stampOf(jobsKey(build.id)) <= ticket ? jobs : undefined;
      const keptJobs = current ?? builds.get(build.id)?.jobs;
      builds.set(build.id, keptJobs ? { build, jobs: keptJobs } : { build });
      idByNumber.set(numberKey(build.pipelineId, build.number), build.id);
    },

    /** Keeps the jobs of a kept build, read with `ticket`, unless they or the build changed since. */
    keepJobs(ticket: number, buildId: string, jobs: readonly Job[]) {
      if (stampOf(buildKey(buildId)) > ticket || stampOf(jobsKey(buildId)) > ticket) return;
      const kept = builds.get(buildId);
      if (kept) builds.set(buildId, { build: kept.build, jobs });
    },

    /** The ids of a kept list, unless one of its scopes changed since it was read. */
    list(key: string): readonly string[] | undefined {
      const kept = lists.get(key);
      if (!kept) return undefined;
      if (kept.scopes.some((s) => stampOf(s) > kept.ticket)) {
        lists.delete(key);
        return undefined;
      }
      return kept.ids;
    },

    /** Keeps a list read with `ticket` over `scopes`, unless one of them changed since. */
    keepList(ticket: number, key: string, scopes: readonly string[], ids: readonly string[]) {
      if (scopes.some((s) => stampOf(s) > ticket)) return;
      lists.set(key, { ids, scopes, ticket });
    },

    /** How much is kept (for /stats and tests). */
    size: () => ({ builds: builds.size, lists: lists.size, stamps: stamps.size }),
  };
}

export type ReadCache = ReturnType<typeof createReadCache>;
