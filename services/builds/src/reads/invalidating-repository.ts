/**
 * The build repository with every write followed by its invalidation (cache-invalidation-feed.ts): a write resolves
 * only once what it changed is known to every replica's read cache, so whatever is acknowledged after it can never
 * be hidden by a kept answer. Reads pass through unchanged. A write that failed may still have been applied: it
 * invalidates too (the whole cache, when the build it changed cannot be told).
 *
 * A build being created (build-creation.ts) is claimed, then its jobs are stored, then the build. Only the build's
 * insert invalidates: no read finds the jobs of a build not stored yet (every read of jobs goes through their build,
 * and a build not found is not kept), nothing is acknowledged to anyone before the build stands, and its
 * invalidation drops the build with its jobs and stamps its lists. The jobs of a creation cut off are removed by the
 * repair, whose writes invalidate.
 */

import type { Logger } from "@conveyor/runtime";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import type { BuildRepository } from "../store/build-repository.js";
import type { Invalidation } from "./read-cache.js";

/**
 * Publishes an invalidation (the feed's publish): it applies it to this replica's cache at once, then resolves once
 * every replica will apply it, or rejects when it could not be made durable.
 */
type Publish = (t: Invalidation) => Promise<void>;

const NOTHING: Invalidation = { builds: [], pipelines: [], organizations: [] };
const EVERYTHING: Invalidation = { ...NOTHING, everything: true };

/** Builds this process has claimed, at most (beyond it, their jobs' inserts invalidate as any other: safe, only slower). */
const MAX_CLAIMED = 10_000;

/** A change of builds themselves: their lists may change too. */
const ofBuilds = (builds: readonly Pick<Build, "id" | "pipelineId" | "organizationId">[]): Invalidation => ({
  builds: [...new Set(builds.map((b) => b.id))],
  pipelines: [...new Set(builds.map((b) => b.pipelineId))],
  organizations: [...new Set(builds.map((b) => b.organizationId))],
});
/** A change of jobs only: their builds' answers change, no build document and no list does. */
const ofJobs = (jobs: readonly Pick<Job, "buildId">[]): Invalidation => ({
  ...NOTHING,
  jobsOf: [...new Set(jobs.map((j) => j.buildId))],
});

/** Wraps a build repository so that each write publishes what it changed (see the file's comment). */
export function withInvalidations(
  inner: BuildRepository,
  publish: Publish,
  logger: Pick<Logger, "error">,
): BuildRepository {
  /** Runs a write, then publishes its invalidation: the one computed from its result, or `onError` when it failed. */
  const invalidating = async <T>(
    write: () => Promise<T>,
    invalidationOf: (result: T) => Invalidation,
    onError: Invalidation,
  ): Promise<T> => {
    let result: T;
    try {
      result = await write();
    } catch (err) {
      // The caller is told the write's own error. Its invalidation failing too is logged: this replica's cache
      // dropped what it names already (publish applies it here first), but other replicas may serve what the write
      // changed until their cache's TTL.
      await publish(onError).catch((publishError: unknown) =>
        logger.error(
          { err: publishError, writeError: err, invalidation: onError },
          "a failed write's invalidation was not published: other replicas may serve what it changed",
        ),
      );
      throw err;
    }
    const t = invalidationOf(result);
    if (t.everything || t.allLists || t.builds.length > 0 || (t.jobsOf?.length ?? 0) > 0) await publish(t);
    return result;
  };
  /** Builds this process claimed (creation-claims.ts) and has not stored yet. */
  const claimed = new Set<string>();
  /** The build of a job, for writes that name only the job. */
  const jobInvalidation = async (id: string): Promise<Invalidation> => {
    const job = await inner.findJob(id);
    return job ? ofJobs([job]) : NOTHING;
  };

  return {
    ...inner,
    async insertClaim(claim) {
      await inner.insertClaim(claim);
      if (claimed.size < MAX_CLAIMED) claimed.add(claim.buildId);
    },
    insertBuild(b) {
      // Whatever it answers, the creation is over: later writes of its jobs invalidate.
      claimed.delete(b.id);
      return invalidating(
        () => inner.insertBuild(b),
        () => ofBuilds([b]),
        ofBuilds([b]),
      );
    },
    deleteJobs: (buildId, ids) =>
      invalidating(
        () => inner.deleteJobs(buildId, ids),
        () => ofJobs([{ buildId }]),
        ofJobs([{ buildId }]),
      ),
    removeBuilds: (ids) =>
      invalidating(
        () => inner.removeBuilds(ids),
        () => ({ ...NOTHING, builds: [...ids], allLists: true }),
        { ...NOTHING, builds: [...ids], allLists: true },
      ),
    async insertJobs(list) {
      if (list.length === 0 || !list.every((j) => claimed.has(j.buildId))) {
        return invalidating(
          () => inner.insertJobs(list),
          () => ofJobs(list),
          ofJobs(list),
        );
      }
      try {
        await inner.insertJobs(list);
      } catch (err) {
        // The creation fails: its claim stays for the repair, whose removal of the jobs invalidates.
        for (const j of list) claimed.delete(j.buildId);
        throw err;
      }
    },
    async removeClaim(buildId) {
      claimed.delete(buildId);
      await inner.removeClaim(buildId);
    },
    insertMissingJobs: (list) =>
      invalidating(
        () => inner.insertMissingJobs(list),
        () => ofJobs(list),
        ofJobs(list),
      ),
    async deleteJob(id, state) {
      const t = await jobInvalidation(id);
      return invalidating(
        () => inner.deleteJob(id, state),
        (deleted) => (deleted ? t : NOTHING),
        t,
      );
    },
    async addDependencies(id, dependsOn) {
      const t = await jobInvalidation(id);
      return invalidating(
        () => inner.addDependencies(id, dependsOn),
        (added) => (added ? t : NOTHING),
        t,
      );
    },
    async setStepPositions(positions) {
      if (positions.length === 0) return;
      const invalidations = await Promise.all([...new Set(positions.map((p) => p.id))].map(jobInvalidation));
      const t = { ...NOTHING, jobsOf: [...new Set(invalidations.flatMap((x) => x.jobsOf ?? []))] };
      return invalidating(
        () => inner.setStepPositions(positions),
        () => t,
        t,
      );
    },
    updateBuild: (id, version, update) =>
      invalidating(
        () => inner.updateBuild(id, version, update),
        (b) => (b ? ofBuilds([b]) : NOTHING),
        { ...NOTHING, builds: [id], allLists: true },
      ),
    updateJobs: (changes, mark) =>
      invalidating(
        () => inner.updateJobs(changes, mark),
        (written) => ofJobs(changes.filter((_, i) => written[i])),
        ofJobs(changes),
      ),
    updateJob: (id, from, update, guard) =>
      invalidating(
        () => inner.updateJob(id, from, update, guard),
        (j) => (j ? ofJobs([j]) : NOTHING),
        EVERYTHING,
      ),
    setHeaderTimes: (id, times, guard) =>
      invalidating(
        () => inner.setHeaderTimes(id, times, guard),
        (j) => (j ? ofJobs([j]) : NOTHING),
        EVERYTHING,
      ),
  };
}
