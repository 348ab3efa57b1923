/**
 * The pipeline lifecycle RPCs: archiving, unarchiving and deleting a pipeline.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import { PipelineDeletedSchema, type PipelinesService } from "@conveyor/proto/pipelines";
import { encodeEvent, failedPrecondition, notFound, pipelineFence, SUBJECTS } from "@conveyor/runtime";
import { deletionKey } from "../events/deletion-outbox.js";
import { pipelineMessage } from "./pipeline-message.js";
import type { PipelinesContext } from "./pipelines-context.js";

type PipelineLifecycleRpcs = Pick<
  ServiceImpl<typeof PipelinesService>,
  "archivePipeline" | "unarchivePipeline" | "deletePipeline"
>;

/** Archiving, unarchiving and deleting pipelines. */
export function createPipelineLifecycleRpcs(ctx: PipelinesContext): PipelineLifecycleRpcs {
  const { repo, now, withLock, requirePipeline, publishChanged, change } = ctx;

  return {
    async archivePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      const refused = () => failedPrecondition("Pipeline could not be archived.");
      const updated = await change(
        req.organizationId,
        found._id,
        async (current) => {
          if (current.archivedAt) throw refused();
          return (version) => {
            const at = now();
            return repo.setArchived(req.organizationId, current._id, at, at, version);
          };
        },
        refused,
      );
      await publishChanged(SUBJECTS.pipelines.archived, updated);
      return { pipeline: pipelineMessage(updated) };
    },

    async unarchivePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      const refused = () => failedPrecondition("Pipeline could not be unarchived.");
      const updated = await change(
        req.organizationId,
        found._id,
        async (current) => {
          if (!current.archivedAt) throw refused();
          return (version) => repo.setArchived(req.organizationId, current._id, null, now(), version);
        },
        refused,
      );
      await publishChanged(SUBJECTS.pipelines.unarchived, updated);
      return { pipeline: pipelineMessage(updated) };
    },

    async deletePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      return withLock(found._id, async () => {
        const current = await requirePipeline(req.organizationId, found._id);
        // No build may be admitted on a copy read before the deletion: the fence goes up first (see `change`).
        await ctx.fences?.raise(pipelineFence(current._id), (current.version ?? 0) + 1);
        // The event is durable before the pipeline goes (identity drops its team associations and rules on it);
        // the relay publishes it if this process cannot, and drops it if the deletion never happened.
        const key = deletionKey(current._id);
        const event = encodeEvent(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, {
          pipelineId: current._id,
          organizationId: current.organizationId,
          slug: current.slug,
        });
        const version = await ctx.outbox.record(key, event);
        if (!(await repo.delete(req.organizationId, current._id))) {
          await ctx.outbox.discard(key, version);
          throw notFound("pipeline");
        }
        await ctx.outbox.send(key, version, event);
        return {};
      });
    },
  };
}
