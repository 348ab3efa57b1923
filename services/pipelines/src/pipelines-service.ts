import type { ServiceImpl } from "@connectrpc/connect";
import type { PipelinesService } from "@conveyor/proto/pipelines";
import { pageWindow, toTimestamp } from "@conveyor/runtime";
import type { PipelineDoc, PipelinesRepository } from "./pipelines-repository.js";

const pipelineMessage = (p: PipelineDoc) => ({
  id: p._id,
  organizationId: p.organizationId,
  slug: p.slug,
  name: p.name,
  repository: p.repository,
  clusterId: p.clusterId ?? "",
  createdAt: toTimestamp(p.createdAt),
  archivedAt: toTimestamp(p.archivedAt),
});

/** The pipelines service. */
export function createPipelinesService(deps: { repo: PipelinesRepository }): ServiceImpl<typeof PipelinesService> {
  return {
    async listPipelines(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await deps.repo.list(req.organizationId, req.includeArchived, skip, perPage);
      return { pipelines: page.items.map(pipelineMessage), totalCount: page.total };
    },
  };
}
