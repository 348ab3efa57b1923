import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { PipelineChangedSchema, type PipelineCounts, PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import type { Logger } from "pino";
import { type NatsHandle, subscribeEvents } from "./nats.js";
import { SUBJECTS } from "./subjects.js";

/** A process's cache of pipelines, as the events that keep it current change it. */
export interface PipelineEventsCache {
  /** Drops what the cache keeps of a pipeline (it changed elsewhere). */
  evict(pipelineId: string): void;
  /** Puts a pipeline's build counters, taken at `at` (ms), into what the cache keeps of it; older ones are ignored. */
  applyCounts(pipelineId: string, counts: Omit<PipelineCounts, "$typeName">, at: number): void;
  /** Drops everything (a subscription broke, and may have missed a change). */
  clear(): void;
}

/**
 * Keeps a process's pipeline cache current (the gateway's, and the notifications service's:
 * docs/notifications.md#what-the-handlers-read): the pipelines service's events (created, updated, archived,
 * unarchived, deleted) drop the pipeline, and the builds service's counter snapshots are put into it in place. Every
 * replica keeps its own cache, so these are plain subscriptions, each a supervised loop (subscribeEvents): an
 * undecodable event is logged and counted, and a subscription that breaks is opened again after the whole cache is
 * dropped, since it may have missed a change. The cache's TTL bounds staleness otherwise. Returns a function that
 * stops them all.
 */
export function subscribePipelineEvents(
  nats: Pick<NatsHandle, "nc">,
  cache: PipelineEventsCache,
  logger: Logger,
): () => Promise<void> {
  const dropAll = () => cache.clear();
  const evictOn = <S extends DescMessage>(
    subject: string,
    schema: S,
    idOf: (event: MessageShape<S>) => string | undefined,
  ) =>
    subscribeEvents(
      nats,
      subject,
      schema,
      logger,
      (event) => {
        const id = idOf(event);
        if (id) cache.evict(id);
      },
      dropAll,
    );
  const { created, updated, archived, unarchived, deleted } = SUBJECTS.pipelines;
  const stops = [
    ...[created, updated, archived, unarchived].map((subject) =>
      evictOn(subject, PipelineChangedSchema, (e) => e.pipeline?.id),
    ),
    evictOn(deleted, PipelineDeletedSchema, (e) => e.pipelineId),
    subscribeEvents(
      nats,
      SUBJECTS.builds.pipelineCountsChanged,
      PipelineCountsChangedSchema,
      logger,
      (e) => {
        if (!e.pipelineId || !e.at) return;
        const { scheduledBuilds, runningBuilds, scheduledJobs, runningJobs, waitingJobs } = e;
        cache.applyCounts(
          e.pipelineId,
          { scheduledBuilds, runningBuilds, scheduledJobs, runningJobs, waitingJobs },
          timestampDate(e.at).getTime(),
        );
      },
      dropAll,
    ),
  ];
  return async (): Promise<void> => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
