/**
 * The reads the builds RPCs answer from (a build with its jobs, a page of builds): from the read cache when the cache
 * invalidation feed's barrier proves it current, else from the database, keeping what was read when nothing it covers
 * changed meanwhile (read-cache.ts says how).
 */

import type { Build } from "../domain/build.js";
import { type Job, jobOrder } from "../domain/job.js";
import type { BuildListFilter } from "../store/build-list-query.js";
import type { BuildRepository } from "../store/build-repository.js";
import type { InvalidationFeed } from "./cache-invalidation-feed.js";
import { listScopes, type ReadCache } from "./read-cache.js";
import { createSharedReads } from "./shared-reads.js";

export interface BuildReads {
  buildWithJobs(pipelineId: string, number: number): Promise<{ build: Build; jobs: readonly Job[] } | null>;
  /** Up to `limit` builds of a list from `skip`, and their jobs (in order, by build) when `withJobs`. */
  page(
    filter: BuildListFilter,
    skip: number,
    limit: number,
    withJobs: boolean,
  ): Promise<{ builds: Build[]; jobs: Map<string, readonly Job[]> }>;
}

/** Groups jobs by build, each build's in order. */
function byBuild(jobs: readonly Job[]): Map<string, Job[]> {
  const grouped = new Map<string, Job[]>();
  for (const job of jobs) {
    const list = grouped.get(job.buildId);
    if (list) list.push(job);
    else grouped.set(job.buildId, [job]);
  }
  for (const list of grouped.values()) list.sort(jobOrder);
  return grouped;
}

/** Reads straight from the database (no cache: one process in tests, or the cache turned off). */
function uncachedReads(repo: BuildRepository): BuildReads {
  return {
    buildWithJobs: (pipelineId, number) => repo.findBuildWithJobs(pipelineId, number),
    async page(filter, skip, limit, withJobs) {
      const builds = await repo.listBuilds(filter, skip, limit);
      const jobs = withJobs && builds.length > 0 ? byBuild(await repo.jobsOf(builds.map((b) => b.id))) : new Map();
      return { builds, jobs };
    },
  };
}

/** The reads over the repository, through the read cache when there is one. */
export function createBuildReads(
  repo: BuildRepository,
  cached?: { cache: ReadCache; feed: InvalidationFeed },
): BuildReads {
  if (!cached) return uncachedReads(repo);
  const { cache, feed } = cached;
  // What a change dropped from the cache, every poller of it misses at once: they share the database reads.
  const shared = createSharedReads();

  /** The jobs of `builds` from the cache where kept, the rest in one query (kept for next time when `fresh`). */
  const jobsOf = async (builds: readonly Build[], fresh: boolean, arrivedAt: number) => {
    const jobs = new Map<string, readonly Job[]>();
    const missing: string[] = [];
    for (const b of builds) {
      const kept = fresh ? cache.byId(b.id)?.jobs : undefined;
      if (kept) jobs.set(b.id, kept);
      else missing.push(b.id);
    }
    if (missing.length === 0) return jobs;
    const read = await shared.share(`jobs|${missing.join(",")}`, arrivedAt, async () => {
      const ticket = cache.ticket();
      const found = byBuild(await repo.jobsOf(missing));
      if (fresh) for (const id of missing) cache.keepJobs(ticket, id, found.get(id) ?? []);
      return found;
    });
    for (const id of missing) jobs.set(id, read.get(id) ?? []);
    return jobs;
  };

  return {
    async buildWithJobs(pipelineId, number) {
      const arrivedAt = performance.now();
      const fresh = await feed.barrier();
      const kept = fresh ? cache.byNumber(pipelineId, number, true) : undefined;
      if (kept?.jobs) return { build: kept.build, jobs: kept.jobs };
      return shared.share(`build|${pipelineId}|${number}`, arrivedAt, async () => {
        const ticket = cache.ticket();
        const found = await repo.findBuildWithJobs(pipelineId, number);
        if (fresh && found) cache.keepBuild(ticket, found.build, found.jobs);
        return found;
      });
    },

    async page(filter, skip, limit, withJobs) {
      const arrivedAt = performance.now();
      const fresh = await feed.barrier();
      const key = JSON.stringify([filter, skip, limit]);
      const ids = fresh ? cache.list(key) : undefined;
      let builds: Build[] | undefined;
      if (ids) {
        const kept = ids.map((id) => cache.byId(id)?.build);
        if (kept.every((b) => b !== undefined)) builds = kept as Build[];
      }
      builds ??= await shared.share(`list|${key}`, arrivedAt, async () => {
        const ticket = cache.ticket();
        const found = await repo.listBuilds(filter, skip, limit);
        if (fresh) {
          for (const b of found) cache.keepBuild(ticket, b);
          cache.keepList(
            ticket,
            key,
            listScopes(filter),
            found.map((b) => b.id),
          );
        }
        return found;
      });
      return { builds, jobs: withJobs ? await jobsOf(builds, fresh, arrivedAt) : new Map() };
    },
  };
}
