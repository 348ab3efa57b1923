import { timestampDate } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { consumeEvents, decodeEvent, type Logger, type NatsHandle, SUBJECTS } from "@conveyor/runtime";
import type { PipelinesRepository } from "../store/pipelines-repository.js";

/**
 * Keeps each pipeline's *_count fields current from the builds service's counter snapshots. Snapshots carry the
 * time they were taken, and an older one never overwrites a newer one, so redelivery and reordering are harmless.
 */
export function consumePipelineCounts(nats: NatsHandle, repo: PipelinesRepository, logger: Logger) {
  return consumeEvents(nats, {
    durable: "pipelines-counts",
    subject: SUBJECTS.builds.pipelineCountsChanged,
    logger,
    async handle(data) {
      const e = decodeEvent(PipelineCountsChangedSchema, data);
      if (!e.pipelineId || !e.at) return;
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
    },
  });
}
