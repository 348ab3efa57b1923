import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ArtifactSchema } from "@conveyor/proto/artifacts";
import { toTimestamp } from "@conveyor/runtime";
import type { ArtifactDoc } from "../store/artifact-repository.js";

/** A record as the Artifact message. */
export function artifactMessage(a: ArtifactDoc): MessageInitShape<typeof ArtifactSchema> {
  return {
    id: a._id,
    buildId: a.buildId,
    jobId: a.jobId,
    state: a.state,
    path: a.path,
    mimeType: a.mimeType,
    fileSize: BigInt(a.fileSize),
    sha1sum: a.sha1sum,
    sha256sum: a.sha256sum,
    createdAt: toTimestamp(a.createdAt),
    organizationId: a.organizationId,
    pipelineId: a.pipelineId,
    buildNumber: a.buildNumber,
    globPath: a.globPath,
    ...(a.uploadedAt ? { uploadedAt: toTimestamp(a.uploadedAt) } : {}),
  };
}
