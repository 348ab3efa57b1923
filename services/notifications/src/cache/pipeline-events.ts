import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { PipelineChangedSchema, PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { type Logger, type NatsHandle, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { PipelineCache } from "./pipeline-cache.js";

/**
 * Keeps the pipeline cache current (docs/notifications.md#what-the-handlers-read): the pipelines service's events
 * (`ci.pipelines.>`: created, updated, archived, unarchived, deleted) drop the pipeline, and the builds service's
 * counter snapshots are put into it in place. Every replica keeps its own cache, so these are plain subscriptions,
 * each a supervised loop (subscribeEvents): one that breaks drops the whole cache, since it may have missed a change,
 * and is opened again. Returns a function that stops them.
 */
export function subscribePipelineEvents(nats: Pick<NatsHandle, "nc">, cache: PipelineCache, logger: Logger) {
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
