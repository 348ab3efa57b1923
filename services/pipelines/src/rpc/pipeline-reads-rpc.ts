/**
 * The pipeline read RPCs: a page of an organization's pipelines, one pipeline, pipelines by id, and the pipeline of a
 * status badge or of a webhook URL.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import { ArchiveFilter, type PipelinesService } from "@conveyor/proto/pipelines";
import { notFound, pageWindow } from "@conveyor/runtime";
import { webhookTokenHash } from "../domain/webhook-token.js";
import type { ArchiveFilter as RepoArchiveFilter } from "../store/pipelines-repository.js";
import { pipelineMessage } from "./pipeline-message.js";
import type { PipelinesContext } from "./pipelines-context.js";

const ARCHIVE_FILTERS: Record<ArchiveFilter, RepoArchiveFilter> = {
  [ArchiveFilter.UNSPECIFIED]: "active",
  [ArchiveFilter.ACTIVE]: "active",
  [ArchiveFilter.ARCHIVED]: "archived",
  [ArchiveFilter.ALL]: "all",
};

type PipelineReadRpcs = Pick<
  ServiceImpl<typeof PipelinesService>,
  "listPipelines" | "getPipeline" | "batchGetPipelines" | "getPipelineByBadgeToken" | "getPipelineByWebhookToken"
>;

/** Reading pipelines. */
export function createPipelineReadRpcs(ctx: PipelinesContext): PipelineReadRpcs {
  const { repo, requirePipeline } = ctx;

  return {
    async listPipelines(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await repo.list(
        req.organizationId,
        ARCHIVE_FILTERS[req.archiveFilter],
        skip,
        perPage,
        req.pipelineIds,
        req.clusterId || undefined,
      );
      return { pipelines: page.items.map(pipelineMessage), totalCount: page.total };
    },

    async getPipeline(req) {
      return { pipeline: pipelineMessage(await requirePipeline(req.organizationId, req.pipeline)) };
    },

    async batchGetPipelines(req) {
      const found = req.ids.length === 0 ? [] : await repo.findMany(req.organizationIds, req.ids);
      return { pipelines: found.map(pipelineMessage) };
    },

    async getPipelineByBadgeToken(req) {
      // An empty token would match an old document stored without one.
      const found = req.badgeToken === "" ? null : await repo.findByBadgeToken(req.badgeToken);
      if (!found) throw notFound("pipeline");
      return { pipeline: pipelineMessage(found) };
    },

    async getPipelineByWebhookToken(req) {
      const found =
        req.webhookToken === "" ? null : await repo.findByWebhookTokenHash(webhookTokenHash(req.webhookToken));
      if (!found) throw notFound("pipeline");
      return { pipeline: pipelineMessage(found) };
    },
  };
}
