import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { PipelineChangedSchema, PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { type Logger, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { PipelineCache } from "./pipeline-cache.js";

/**
 * Keeps the pipeline cache current: a pipeline's cached answers are dropped when any gateway or service changes it,
 * and its build counters are updated in place from the builds service's snapshots. Every gateway needs every such
 * event, so these are plain subscriptions, each a supervised loop (subscribeEvents): an undecodable event is logged
 * and counted, and a subscription that breaks is made again after the whole cache is dropped, since it may have
 * missed a change. The TTL bounds staleness otherwise. Returns a function that stops them all.
 */
export function subscribePipelineEvents(nc: NatsConnection, cache: PipelineCache, logger: Logger) {
  const dropAll = () => cache.clear();
  const evictOn = <S extends DescMessage>(
    subject: string,
    schema: S,
    idOf: (event: MessageShape<S>) => string | undefined,
  ) =>
    subscribeEvents(
      { nc },
      subject,
      schema,
      logger,
      (event) => {
        const id = idOf(event);
        if (id) cache.evict(id);
      },
      dropAll,
    );
  const stops = [
    ...[SUBJECTS.pipelines.updated, SUBJECTS.pipelines.archived, SUBJECTS.pipelines.unarchived].map((subject) =>
      evictOn(subject, PipelineChangedSchema, (e) => e.pipeline?.id),
    ),
    evictOn(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, (e) => e.pipelineId),
    subscribeEvents(
      { nc },
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
