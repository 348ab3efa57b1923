import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentSchema, AgentTokenSchema, ClusterQueueSchema, ClusterSchema } from "@conveyor/proto/agents";
import type { BuildUserSchema, JobAgentSchema } from "@conveyor/proto/builds";
import { toTimestamp } from "@conveyor/runtime";
import type { AgentDoc } from "../store/agent-repository.js";
import type { AgentTokenDoc, ClusterDoc } from "../store/cluster-repository.js";
import type { QueueDoc, QueueUserRef } from "../store/queue-repository.js";

/** A stored cluster as the Cluster message. */
export function clusterMessage(c: ClusterDoc): MessageInitShape<typeof ClusterSchema> {
  return {
    id: c._id,
    organizationId: c.organizationId,
    name: c.name,
    description: c.description,
    createdAt: toTimestamp(c.createdAt),
  };
}

/** A stored registration token as the AgentToken message (never its secret). */
export function tokenMessage(t: AgentTokenDoc): MessageInitShape<typeof AgentTokenSchema> {
  return {
    id: t._id,
    organizationId: t.organizationId,
    clusterId: t.clusterId ?? "",
    description: t.description,
    createdAt: toTimestamp(t.createdAt),
    revokedAt: toTimestamp(t.revokedAt),
  };
}

/** A stored agent as the Agent message (never its access token). */
export function agentMessage(a: AgentDoc): MessageInitShape<typeof AgentSchema> {
  return {
    id: a._id,
    organizationId: a.organizationId,
    clusterId: a.clusterId ?? "",
    tokenId: a.tokenId,
    name: a.name,
    hostname: a.hostname,
    os: a.os,
    arch: a.arch,
    version: a.version,
    build: a.build,
    userAgent: a.userAgent,
    ipAddress: a.ipAddress,
    metaData: a.metaData,
    queue: a.queue,
    priority: a.priority ?? undefined,
    connectionState: a.connectionState,
    currentJobId: a.currentJobId ?? "",
    paused: a.paused,
    pausedNote: a.pausedNote ?? "",
    stopRequested: a.stopRequested,
    pid: a.pid,
    machineId: a.machineId,
    createdAt: toTimestamp(a.createdAt),
    connectedAt: toTimestamp(a.connectedAt),
    disconnectedAt: toTimestamp(a.disconnectedAt),
    lostAt: toTimestamp(a.lostAt),
    stoppedAt: toTimestamp(a.stoppedAt),
    lastSeenAt: toTimestamp(a.lastSeenAt),
    lastJobFinishedAt: toTimestamp(a.lastJobFinishedAt),
    pausedAt: toTimestamp(a.pausedAt),
    pausedBy: a.pausedBy
      ? {
          id: a.pausedBy.id,
          name: a.pausedBy.name,
          email: a.pausedBy.email,
          avatarUrl: a.pausedBy.avatarUrl,
          createdAt: toTimestamp(a.pausedBy.createdAt),
        }
      : undefined,
    pausedTimeoutInMinutes: a.paused ? (a.pausedTimeoutInMinutes ?? undefined) : undefined,
  };
}

/** The agent as a job records it when assigned. */
export function jobAgentMessage(a: AgentDoc): MessageInitShape<typeof JobAgentSchema> {
  return {
    id: a._id,
    name: a.name,
    hostname: a.hostname,
    ipAddress: a.ipAddress,
    userAgent: a.userAgent,
    connectionState: a.connectionState,
    createdAt: toTimestamp(a.createdAt),
    metaData: a.metaData,
  };
}

/** A user a queue recorded, as the BuildUser message. */
function userMessage(u: QueueUserRef | null): MessageInitShape<typeof BuildUserSchema> | undefined {
  return u ? { id: u.id, name: u.name, email: u.email, avatarUrl: u.avatarUrl } : undefined;
}

/** A stored queue as the ClusterQueue message. */
export function queueMessage(q: QueueDoc): MessageInitShape<typeof ClusterQueueSchema> {
  return {
    id: q._id,
    organizationId: q.organizationId,
    clusterId: q.clusterId,
    key: q.key,
    description: q.description,
    dispatchPaused: q.dispatchPaused,
    dispatchPausedAt: toTimestamp(q.dispatchPausedAt),
    dispatchPausedNote: q.dispatchPausedNote ?? "",
    dispatchPausedBy: userMessage(q.dispatchPausedBy),
    createdAt: toTimestamp(q.createdAt),
    createdBy: userMessage(q.createdBy),
  };
}
