import { PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { consumeEvents, decodeEvent, type Logger, type NatsHandle, SUBJECTS } from "@conveyor/runtime";
import type { RuleRepository } from "../store/rule-repository.js";
import type { TeamRepository } from "../store/team-repository.js";

type Repos = { teams: Pick<TeamRepository, "removePipelineEverywhere">; rules: Pick<RuleRepository, "removeRulesOf"> };

/**
 * Handles one pipeline_deleted event: drops the pipeline's team associations and rules. An event that names no
 * pipeline (a bug of its sender) is logged and dropped, not retried for ever.
 */
export function pipelineDeletionHandler(repos: Repos, logger: Pick<Logger, "warn">) {
  return async (data: Uint8Array): Promise<void> => {
    const e = decodeEvent(PipelineDeletedSchema, data);
    if (!e.pipelineId) {
      logger.warn(
        { organizationId: e.organizationId, slug: e.slug },
        "pipeline_deleted event names no pipeline: dropped",
      );
      return;
    }
    await repos.teams.removePipelineEverywhere(e.pipelineId);
    await repos.rules.removeRulesOf(e.pipelineId);
  };
}

/**
 * Drops the team associations and rules of pipelines the pipelines service deleted, so team pipeline lists and
 * rule lists never name a pipeline that is gone. Deleting what is already gone is harmless, so redelivery is too.
 */
export function consumePipelineDeletions(nats: NatsHandle, repos: Repos, logger: Logger) {
  return consumeEvents(nats, {
    durable: "identity-pipeline-deletions",
    subject: SUBJECTS.pipelines.deleted,
    logger,
    handle: pipelineDeletionHandler(repos, logger),
  });
}
