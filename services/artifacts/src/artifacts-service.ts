import type { ServiceImpl } from "@connectrpc/connect";
import type { ArtifactsService } from "@conveyor/proto/artifacts";
import type { ArtifactsContext } from "./artifacts-context.js";
import { createBatchRpcs } from "./rpc/batch-rpc.js";
import { createManageRpcs } from "./rpc/manage-rpc.js";
import { createReadRpcs } from "./rpc/read-rpc.js";

/** The artifacts service: batches and states from agents, reads and deletes from the gateway, retention. */
export function createArtifactsService(ctx: ArtifactsContext): ServiceImpl<typeof ArtifactsService> {
  return { ...createBatchRpcs(ctx), ...createReadRpcs(ctx), ...createManageRpcs(ctx) };
}
