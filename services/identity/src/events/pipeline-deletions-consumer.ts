import { PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { consumeEvents, decodeEvent, type Logger, type NatsHandle, SUBJECTS } from "@conveyor/runtime";
import type { RuleRepository } from "../store/rule-repository.js";
import type { TeamRepository } from "../store/team-repository.js";

/**
 * Drops the team associations and rules of pipelines the pipelines service deleted, so team pipeline lists and
 * rule lists never name a pipeline that is gone. Deleting what is already gone is harmless, so redelivery is too.
 */
export function consumePipelineDeletions(
  nats: NatsHandle,
  repos: { teams: TeamRepository; rules: RuleRepository },
  logger: Logger,
) {
  return consumeEvents(nats, {
    durable: "identity-pipeline-deletions",
    subject: SUBJECTS.pipelines.deleted,
    logger,
    async handle(data) {
      const e = decodeEvent(PipelineDeletedSchema, data);
      if (!e.pipelineId) return;
      await repos.teams.removePipelineEverywhere(e.pipelineId);
      await repos.rules.removeRulesOf(e.pipelineId);
    },
  });
}
