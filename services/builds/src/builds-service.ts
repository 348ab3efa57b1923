/**
 * The Connect services this process serves, assembled from their RPC handler groups (rpc/): BuildsService from the
 * builds, reads, jobs, job-action and webhook RPCs over the parts builds-context.ts makes; AnnotationsService from the
 * annotation RPCs.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { AnnotationsService } from "@conveyor/proto/annotations";
import type { BuildsService } from "@conveyor/proto/builds";
import type { BuildsParts } from "./builds-context.js";
import { type AnnotationsDeps, createAnnotationRpcs } from "./rpc/annotations-rpc.js";
import { createBuildRpcs } from "./rpc/builds-rpc.js";
import { createJobActionRpcs } from "./rpc/job-actions-rpc.js";
import { createJobRpcs } from "./rpc/jobs-rpc.js";
import { createReadBuildsRpc } from "./rpc/read-builds-rpc.js";
import { createStepRpcs } from "./rpc/steps-rpc.js";
import { createWebhookRpcs } from "./rpc/webhooks-rpc.js";

/** The builds service: creation, the state machine, cancel, rebuild, lists, jobs, steps, logs, meta-data, webhooks. */
export function createBuildsService(parts: BuildsParts): ServiceImpl<typeof BuildsService> {
  const { ctx } = parts;
  const buildRpcs = createBuildRpcs(ctx, parts);
  return {
    ...buildRpcs,
    ...createReadBuildsRpc(buildRpcs),
    ...createJobRpcs(ctx, parts),
    ...createJobActionRpcs(ctx, parts),
    ...createWebhookRpcs(parts.webhooks),
    ...createStepRpcs(parts.steps, parts.promiseFailure),
  };
}

/** The annotations service, over the annotations and the builds they belong to. */
export function createAnnotationsService(deps: AnnotationsDeps): ServiceImpl<typeof AnnotationsService> {
  return createAnnotationRpcs(deps);
}
