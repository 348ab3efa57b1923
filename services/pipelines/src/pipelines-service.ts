import type { ServiceImpl } from "@connectrpc/connect";
import type { PipelinesService } from "@conveyor/proto/pipelines";
import { createPipelineDefinitionRpcs } from "./rpc/pipeline-definitions-rpc.js";
import { createPipelineLifecycleRpcs } from "./rpc/pipeline-lifecycle-rpc.js";
import { createPipelineReadRpcs } from "./rpc/pipeline-reads-rpc.js";
import { createPipelinesContext, type PipelinesServiceDeps } from "./rpc/pipelines-context.js";
import { createScheduleRpcs } from "./rpc/schedules-rpc.js";

export type { PipelinesServiceDeps };

/**
 * The pipelines service, assembled from its RPC groups: reads, definitions (create, update), lifecycle and
 * schedules.
 */
export function createPipelinesService(deps: PipelinesServiceDeps): ServiceImpl<typeof PipelinesService> {
  const ctx = createPipelinesContext(deps);
  return {
    ...createPipelineReadRpcs(ctx),
    ...createPipelineDefinitionRpcs(ctx),
    ...createPipelineLifecycleRpcs(ctx),
    ...createScheduleRpcs(ctx),
  };
}
