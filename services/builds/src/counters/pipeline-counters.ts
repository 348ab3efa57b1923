/**
 * A pipeline's live counters (scheduled and running builds, scheduled, running and waiting jobs), announced to the
 * pipelines service as `pipeline_counts_changed` events after every change that may move them. An announcement
 * that must not be lost goes through the outbox (the runtime's outbox.ts): a write that changes counters first
 * records that they must be announced, so a process that dies before announcing leaves the entry for the relay.
 */
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import {
  createCoalescer,
  createMemoryOutboxStore,
  createOutbox,
  type EventPublisher,
  encodeEvent,
  type Logger,
  type Outbox,
  type OutboxResolver,
  type OutboxStore,
  type RawPublish,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { LRUCache } from "lru-cache";
import { publishThroughEvents } from "../events/state-events.js";
import type { BuildRepository } from "../store/build-repository.js";

/** Where counters events wait until JetStream has them; without it, an in-memory outbox (unit tests). */
export interface CountersOutboxDeps {
  store: OutboxStore;
  publish: RawPublish;
  graceMs?: number;
  leaseMs?: number;
}

/** What every part that changes counters uses: record, then announce after the write. */
export interface PipelineCounters {
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
  /**
   * Re-announces the counters of every pipeline with recent activity (COUNTS_ACTIVE_MS), so that a counters event
   * lost on the way (NATS down for a moment) is corrected soon after (a duty main.ts runs on a timer).
   */
  republishCounts(): Promise<void>;
}

/** The outbox key of a pipeline's counters. */
export const countsKey = (pipelineId: string) => `counts:${pipelineId}`;

/** Pipelines whose last request for counters is remembered, at most (a few dozen bytes each). */
const MAX_COUNTED_PIPELINES = 50_000;
/** How recent a pipeline's activity must be for `republishCounts` to announce its counters again. */
const COUNTS_ACTIVE_MS = 10 * 60_000;

/** Creates the counters announcements of the builds service. */
export function createPipelineCounters(deps: {
  repo: Pick<BuildRepository, "pipelineCounts" | "activePipelines">;
  events: EventPublisher;
  outbox?: CountersOutboxDeps;
  /** The resolvers of the other entries the service's one outbox holds (events/state-events.ts). */
  resolvers?: Record<string, OutboxResolver>;
  logger: Logger;
  now: () => Date;
}): PipelineCounters {
  const { repo, events, logger, now } = deps;

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
    publish: deps.outbox?.publish ?? publishThroughEvents(events),
    logger,
    now,
    graceMs: deps.outbox?.graceMs,
    leaseMs: deps.outbox?.leaseMs,
    // The counters are recounted when published: republishing an entry is always right, whatever wrote since.
    resolvers: { ...deps.resolvers, counts: (entry) => countsEvent(entry.key.slice("counts:".length)) },
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
  // When each pipeline's counters were last asked for, for `republishCounts`: the most recently asked are kept.
  const askedAt = new LRUCache<string, number>({ max: MAX_COUNTED_PIPELINES });

  const countedSince = (since: Date) => {
    const from = since.getTime();
    const ids: string[] = [];
    // Most recently asked first: the walk stops at the first one asked before `since`.
    for (const [pipelineId, at] of askedAt.entries()) {
      if (at < from) break;
      ids.push(pipelineId);
    }
    return ids;
  };
  const reannounceCounts = (pipelineIds: Iterable<string>) => {
    for (const pipelineId of pipelineIds) counts.request(pipelineId);
  };

  let scannedOnce = false;
  return {
    markCounts,
    publishCounts(pipelineId) {
      askedAt.set(pipelineId, now().getTime());
      counts.request(pipelineId);
    },
    countedSince,
    reannounceCounts,
    countsIdle: () => counts.idle(),
    outbox,
    async republishCounts() {
      const since = new Date(now().getTime() - COUNTS_ACTIVE_MS);
      // The first pass reads the database (pipelines with unfinished or recently finished builds), which corrects
      // counters whatever happened before this process started; it decodes every unfinished build, thousands when
      // agents fall behind. Later passes re-announce the pipelines this process changed since, at no cost to the
      // database: each replica covers its own changes, and the outbox those of a process that died.
      const pipelines = scannedOnce ? countedSince(since) : await repo.activePipelines(since);
      scannedOnce = true;
      reannounceCounts(pipelines);
      await counts.idle();
    },
  };
}
