import { timestampDate } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { consumeEvents, decodeEvent, type Logger, type NatsHandle, SUBJECTS } from "@conveyor/runtime";
import type { PipelinesRepository } from "../store/pipelines-repository.js";

/**
 * Handles one pipeline_counts_changed snapshot: stores the counters unless newer ones are stored. A snapshot
 * without its pipeline or its time (a bug of its sender) is logged and dropped, not retried for ever.
 */
export function pipelineCountsHandler(repo: Pick<PipelinesRepository, "setCounts">, logger: Pick<Logger, "warn">) {
  return async (data: Uint8Array): Promise<void> => {
    const e = decodeEvent(PipelineCountsChangedSchema, data);
    if (!e.pipelineId || !e.at) {
      logger.warn({ pipelineId: e.pipelineId }, "pipeline counts snapshot without its pipeline or time: dropped");
      return;
    }
    await repo.setCounts(
      e.pipelineId,
      {
        scheduledBuilds: e.scheduledBuilds,
        runningBuilds: e.runningBuilds,
        scheduledJobs: e.scheduledJobs,
        runningJobs: e.runningJobs,
        waitingJobs: e.waitingJobs,
      },
      timestampDate(e.at),
    );
  };
}

/**
 * Keeps each pipeline's *_count fields current from the builds service's counter snapshots. Snapshots carry the
 * time they were taken, and an older one never overwrites a newer one, so redelivery and reordering are harmless.
 */
export function consumePipelineCounts(nats: NatsHandle, repo: PipelinesRepository, logger: Logger) {
  return consumeEvents(nats, {
    durable: "pipelines-counts",
    subject: SUBJECTS.builds.pipelineCountsChanged,
    logger,
    handle: pipelineCountsHandler(repo, logger),
  });
}
