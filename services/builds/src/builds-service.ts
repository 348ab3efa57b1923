/**
 * The Connect services this process serves, assembled from their RPC handler groups (rpc/): BuildsService from the
 * builds, reads, jobs and job-action RPCs over the parts builds-context.ts makes; AnnotationsService from the
 * annotation RPCs.
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AnnotationsService } from "@conveyor/proto/annotations";
import type { BuildsService } from "@conveyor/proto/builds";
import type { BuildsParts } from "./builds-context.js";
import { type AnnotationsDeps, createAnnotationRpcs } from "./rpc/annotations-rpc.js";
import { createBuildRpcs } from "./rpc/builds-rpc.js";
import { createJobActionRpcs } from "./rpc/job-actions-rpc.js";
import { createJobRpcs } from "./rpc/jobs-rpc.js";
import { createReadBuildsRpc } from "./rpc/read-builds-rpc.js";

/** The builds service: creation, the state machine, cancel, rebuild, lists, jobs, logs, meta-data. */
export function createBuildsService(parts: BuildsParts): ServiceImpl<typeof BuildsService> {
  const { ctx } = parts;
  const buildRpcs = createBuildRpcs(ctx, parts);
  return {
    ...buildRpcs,
    ...createReadBuildsRpc(buildRpcs),
    ...createJobRpcs(ctx, parts),
    ...createJobActionRpcs(ctx, parts),
    // Replaced by the webhook inbox's RPC in the commit that adds it (issue 33).
    async receiveWebhook() {
      throw new ConnectError("webhook deliveries are not received yet", Code.Unimplemented);
    },
  };
}

/** The annotations service, over the annotations and the builds they belong to. */
export function createAnnotationsService(deps: AnnotationsDeps): ServiceImpl<typeof AnnotationsService> {
  return createAnnotationRpcs(deps);
}
