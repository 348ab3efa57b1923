import type { ServiceImpl } from "@connectrpc/connect";
import type { ArtifactsService } from "@conveyor/proto/artifacts";
import { pageWindow, toTimestamp } from "@conveyor/runtime";
import type { ArtifactDoc, ArtifactsRepository } from "./artifacts-repository.js";

const artifactMessage = (a: ArtifactDoc) => ({
  id: a._id,
  buildId: a.buildId,
  jobId: a.jobId,
  state: a.state,
  path: a.path,
  mimeType: a.mimeType,
  fileSize: BigInt(a.fileSize),
  sha1sum: a.sha1sum,
  createdAt: toTimestamp(a.createdAt),
});

/** The artifacts service. */
export function createArtifactsService(deps: { repo: ArtifactsRepository }): ServiceImpl<typeof ArtifactsService> {
  return {
    async listArtifacts(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const filter = req.jobId === "" ? { buildId: req.buildId } : { buildId: req.buildId, jobId: req.jobId };
      const page = await deps.repo.list(filter, skip, perPage);
      return { artifacts: page.items.map(artifactMessage), totalCount: page.total };
    },
  };
}
