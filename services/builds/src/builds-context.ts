import { fromBinary } from "@bufbuild/protobuf";
import { BuildChangedSchema, JobStateChangedSchema, PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import {
  createCoalescer,
  createKeyedLock,
  createMemoryOutboxStore,
  createOutbox,
  type EventPublisher,
  encodeEvent,
  type KeyedLock,
  type Logger,
  type Outbox,
  type OutboxStore,
  type RawPublish,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { LRUCache } from "lru-cache";
import type { Build } from "./domain/build.js";
import type { Job } from "./domain/job.js";
import { type BuildReads, createBuildReads } from "./reads/build-reads.js";
import type { TouchBus } from "./reads/cache-invalidation-feed.js";
import { withTouches } from "./reads/invalidating-repository.js";
import type { ReadCache } from "./reads/read-cache.js";
import { buildMessage, jobMessage } from "./rpc/build-message.js";
import type { BuildRepository } from "./store/build-repository.js";
import type { ConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
import type { JobLogRepository } from "./store/job-log-repository.js";
import type { PipelineUploadRepository } from "./store/pipeline-upload-repository.js";

export interface BuildServiceDeps {
  repo: BuildRepository;
  logs: JobLogRepository;
  uploads: PipelineUploadRepository;
  slots: ConcurrencySlotRepository;
  events: EventPublisher;
  /**
   * Where counters events wait until JetStream has them (see outbox.ts in the runtime). Without it, an in-memory
   * outbox publishes through `events` (unit tests).
   */
  outbox?: { store: OutboxStore; publish: RawPublish; graceMs?: number; leaseMs?: number };
  logger: Logger;
  now?: () => Date;
  /**
   * The read cache of builds and lists and the bus that keeps every replica's current (read-cache.ts,
   * touch-bus.ts). Without it, every read goes to the database.
   */
  readCache?: { cache: ReadCache; bus: TouchBus };
}

/** The outbox key of a pipeline's counters. */
export const countsKey = (pipelineId: string) => `counts:${pipelineId}`;

/** How often a compare-and-set loop retries before giving up (only under heavy contention on one build). */
export const MAX_ATTEMPTS = 20;
/** Pipelines whose last request for counters republishCounts remembers, at most (a few dozen bytes each). */
const MAX_COUNTED_PIPELINES = 50_000;

/** What every part of the builds service shares: storage, the clock, per-build locks and event publishing. */
export interface BuildsContext {
  /** The repository; with a read cache, each of its writes is announced to every replica's cache. */
  repo: BuildRepository;
  /** The reads the RPCs answer from: a build with its jobs, a page of builds (cached when there is a cache). */
  reads: BuildReads;
  logs: JobLogRepository;
  logger: Logger;
  now: () => Date;
  /** Serializes the compare-and-set sections per build; see createKeyedLock. */
  withLock: KeyedLock;
  publishBuild(subject: string, build: Build, previousState: string): Promise<void>;
  publishJob(job: Job, previousState: string): Promise<void>;
  /**
   * Makes durable, before a write that changes a pipeline's counters, that they must be announced again (an outbox
   * entry). While this process knows the entry stands and no announcement began since, it costs nothing.
   */
  markCounts(pipelineId: string): Promise<void>;
  /** Asks for a pipeline's counters to be recounted and announced soon (coalesced, off the caller's path). */
  publishCounts(pipelineId: string): void;
  /** The pipelines whose counters a change in this process asked to announce since `since` (see republishCounts). */
  countedSince(since: Date): string[];
  /** Announces the pipelines' counters again, as publishCounts does, without counting it as a change. */
  reannounceCounts(pipelineIds: Iterable<string>): void;
  /** Resolves once no recount is pending. */
  countsIdle(): Promise<void>;
  /** The outbox of the counters events; its relay runs in the builds process. */
  outbox: Outbox;
}

/** Creates the shared context of the builds service. */
export function createBuildsContext(deps: BuildServiceDeps): BuildsContext {
  const { events, logger, readCache } = deps;
  const repo = readCache ? withTouches(deps.repo, readCache.bus.publish) : deps.repo;
  const now = deps.now ?? (() => new Date());

  const countsEvent = async (pipelineId: string) => {
    const at = now();
    const counts = await repo.pipelineCounts(pipelineId);
    return encodeEvent(SUBJECTS.builds.pipelineCountsChanged, PipelineCountsChangedSchema, {
      pipelineId,
      ...counts,
      at: toTimestamp(at),
    });
  };
  const outbox = createOutbox({
    store: deps.outbox?.store ?? createMemoryOutboxStore(),
    publish:
      deps.outbox?.publish ??
      ((subject, data) =>
        events.publish(subject, PipelineCountsChangedSchema, fromBinary(PipelineCountsChangedSchema, data))),
    logger,
    now,
    graceMs: deps.outbox?.graceMs,
    leaseMs: deps.outbox?.leaseMs,
    // The counters are recounted when published: republishing an entry is always right, whatever wrote since.
    resolvers: { counts: (entry) => countsEvent(entry.key.slice("counts:".length)) },
  });

  // Pipelines whose outbox entry this process recorded since their last announcement began; `announcements`
  // counts announcements begun, so a record that raced one is not trusted to stand.
  const marked = new Set<string>();
  let announcements = 0;
  const markCounts = async (pipelineId: string) => {
    if (marked.has(pipelineId)) return;
    const before = announcements;
    await outbox.record(countsKey(pipelineId));
    if (announcements === before) marked.add(pipelineId);
  };

  const publishCountsNow = async (pipelineId: string) => {
    announcements++;
    marked.delete(pipelineId);
    try {
      // The recorded entry is published (and removed) if there is one; a periodic re-announcement has none.
      if ((await outbox.flush(countsKey(pipelineId))) === "none")
        await outbox.publishUnrecorded(await countsEvent(pipelineId));
    } catch (err) {
      logger.warn({ err, pipelineId }, "pipeline counters not published");
    }
  };
  // Counters are recounted in the background after a change, one recount per pipeline at a time: under load the
  // recounts coalesce, and the change that asked for one (a create, a job transition) does not wait for it. A
  // recount reads every unfinished build and job of the pipeline, so the next one waits three times as long as the
  // last took, and at least 250 ms: on a pipeline with thousands of queued jobs recounts take at most a quarter of
  // the database instead of all of it, a busy pipeline is recounted (and its counters stored by the pipelines
  // service) at most four times a second, and counters lag by that much.
  const counts = createCoalescer(publishCountsNow, { gapMs: (ms) => Math.max(250, 3 * ms) });
  // When each pipeline's counters were last asked for, for republishCounts: the most recently asked are kept.
  const askedAt = new LRUCache<string, number>({ max: MAX_COUNTED_PIPELINES });

  return {
    repo,
    reads: createBuildReads(deps.repo, readCache),
    logs: deps.logs,
    logger,
    now,
    withLock: createKeyedLock(),
    async publishBuild(subject, build, previousState) {
      await events.publish(subject, BuildChangedSchema, { build: buildMessage(build), previousState });
    },
    async publishJob(job, previousState) {
      await events.publish(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema, {
        job: jobMessage(job),
        previousState,
        organizationId: job.organizationId,
        pipelineId: job.pipelineId,
        buildNumber: job.buildNumber,
      });
    },
    markCounts,
    publishCounts(pipelineId) {
      askedAt.set(pipelineId, now().getTime());
      counts.request(pipelineId);
    },
    countedSince(since) {
      const from = since.getTime();
      const ids: string[] = [];
      // Most recently asked first: the walk stops at the first one asked before `since`.
      for (const [pipelineId, at] of askedAt.entries()) {
        if (at < from) break;
        ids.push(pipelineId);
      }
      return ids;
    },
    reannounceCounts(pipelineIds) {
      for (const pipelineId of pipelineIds) counts.request(pipelineId);
    },
    countsIdle: () => counts.idle(),
    outbox,
  };
}
