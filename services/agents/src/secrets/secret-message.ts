import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ClusterSecretSchema, SecretReadSchema } from "@conveyor/proto/secrets";
import { toTimestamp } from "@conveyor/runtime";
import type { ActorDoc, SecretDoc, SecretReadDoc } from "./secret-repository.js";

const actor = (a: ActorDoc | null) => (a ? { id: a.id, name: a.name, email: a.email } : undefined);

/** A stored secret as the ClusterSecret message: its metadata, never its value. */
export function secretMessage(s: SecretDoc): MessageInitShape<typeof ClusterSecretSchema> {
  return {
    id: s._id,
    organizationId: s.organizationId,
    clusterId: s.clusterId,
    key: s.key,
    description: s.description,
    policy: s.policy,
    createdAt: toTimestamp(s.createdAt),
    createdBy: actor(s.createdBy),
    updatedAt: toTimestamp(s.updatedAt),
    updatedBy: actor(s.updatedBy),
    lastReadAt: toTimestamp(s.lastReadAt),
  };
}

/** A stored read as the SecretRead message. */
export function readMessage(r: SecretReadDoc): MessageInitShape<typeof SecretReadSchema> {
  return {
    id: r._id,
    secretId: r.secretId,
    key: r.key,
    jobId: r.jobId,
    buildId: r.buildId,
    agentId: r.agentId,
    pipelineSlug: r.pipelineSlug,
    branch: r.branch,
    allowed: r.allowed,
    reason: r.reason,
    readAt: toTimestamp(r.readAt),
  };
}
