import type { ServiceImpl } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import { pageWindow, toTimestamp } from "@conveyor/runtime";
import type { BuildDoc, BuildsRepository } from "./builds-repository.js";

const buildMessage = (b: BuildDoc) => ({
  id: b._id,
  organizationId: b.organizationId,
  pipelineId: b.pipelineId,
  number: b.number,
  state: b.state,
  branch: b.branch,
  commit: b.commit,
  message: b.message,
  createdAt: toTimestamp(b.createdAt),
});

/** The builds service. */
export function createBuildsService(deps: { repo: BuildsRepository }): ServiceImpl<typeof BuildsService> {
  return {
    async listBuilds(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const filter =
        req.pipelineId === ""
          ? { organizationIds: req.organizationIds }
          : { organizationIds: req.organizationIds, pipelineId: req.pipelineId };
      const builds = await deps.repo.list(filter, skip, perPage);
      return { builds: builds.map(buildMessage) };
    },
  };
}
