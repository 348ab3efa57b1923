import { Code, ConnectError } from "@connectrpc/connect";
import { RulesService, TeamsService } from "@conveyor/proto/identity";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { createServiceClient } from "@conveyor/runtime";
import type { TriggerLookups } from "./job-triggers.js";

/** The rule type that lets one pipeline trigger builds of another across clusters (docs/compatibility.md#rest-operations). */
export const TRIGGER_RULE = "pipeline.trigger_build.pipeline";

/** Trigger lookups over the pipelines service and identity's teams and rules services. */
export function createTriggerLookups(urls: { pipelinesUrl: string; identityUrl: string }): TriggerLookups {
  const pipelines = createServiceClient(PipelinesService, urls.pipelinesUrl);
  const teams = createServiceClient(TeamsService, urls.identityUrl);
  const rules = createServiceClient(RulesService, urls.identityUrl);
  return {
    async pipeline(organizationId, slug) {
      try {
        return (await pipelines.getPipeline({ organizationId, pipeline: slug })).pipeline ?? null;
      } catch (err) {
        if (ConnectError.from(err).code === Code.NotFound) return null;
        throw err;
      }
    },
    async mayBuild(organizationId, userId, pipelineId) {
      const res = await teams.getPipelineAccess({ organizationId, userId, pipelineIds: [pipelineId] });
      return res.pipelines[0]?.build ?? false;
    },
    async ruleAllows(organizationId, sourceId, targetId) {
      return (await rules.checkRule({ organizationId, type: TRIGGER_RULE, sourceId, targetId })).allowed;
    },
  };
}
