import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { BuildSchema, JobSchema } from "@conveyor/proto/builds";
import { toTimestamp } from "@conveyor/runtime";
import type { BuildDoc, JobDoc, UserSnapshot } from "./build-repository.js";

const user = (u: UserSnapshot | null) =>
  u && { id: u.id, name: u.name, email: u.email, avatarUrl: u.avatarUrl ?? "", createdAt: toTimestamp(u.createdAt) };

/** A stored job as the Job message. */
export function jobMessage(j: JobDoc): MessageInitShape<typeof JobSchema> {
  const trigger = j.triggerJson ? (JSON.parse(j.triggerJson) as { pipeline: string; async: boolean }) : null;
  return {
    id: j._id,
    buildId: j.buildId,
    type: j.type,
    name: j.name,
    label: j.label,
    stepKey: j.stepKey ?? "",
    clusterId: j.clusterId ?? "",
    stepId: j.stepId,
    stepIndex: j.stepIndex,
    state: j.state,
    command: j.command ?? "",
    agentQueryRules: j.agentQueryRules,
    env: JSON.parse(j.envJson) as Record<string, string>,
    artifactPaths: j.artifactPaths ?? "",
    timeoutInMinutes: j.timeoutInMinutes ?? undefined,
    priority: j.priority,
    parallelGroupIndex: j.parallelGroupIndex ?? undefined,
    parallelGroupTotal: j.parallelGroupTotal ?? undefined,
    exitStatus: j.exitStatus ?? undefined,
    softFailed: j.softFailed,
    retried: j.retried,
    brokenReason: j.brokenReason ?? "",
    dependsOn: j.dependsOn,
    allowDependencyFailure: j.allowDependencyFailure,
    allowFailureOf: j.allowFailureOf,
    continueOnFailure: j.continueOnFailure,
    blockedState: j.blockedState ?? "",
    isInput: j.isInput,
    step: JSON.parse(j.stepJson) as JsonObject,
    agent: j.agent
      ? {
          id: j.agent.id,
          name: j.agent.name,
          hostname: j.agent.hostname,
          ipAddress: j.agent.ipAddress,
          userAgent: j.agent.userAgent,
          connectionState: j.agent.connectionState,
          createdAt: toTimestamp(j.agent.createdAt),
        }
      : undefined,
    createdAt: toTimestamp(j.createdAt),
    scheduledAt: toTimestamp(j.scheduledAt),
    runnableAt: toTimestamp(j.runnableAt),
    startedAt: toTimestamp(j.startedAt),
    finishedAt: toTimestamp(j.finishedAt),
    unblockedAt: toTimestamp(j.unblockedAt),
    triggerPipeline: trigger?.pipeline ?? "",
    triggerAsync: trigger?.async ?? false,
  };
}

/** A stored build (and its jobs, when given) as the Build message. */
export function buildMessage(b: BuildDoc, jobs: JobDoc[] = []): MessageInitShape<typeof BuildSchema> {
  return {
    id: b._id,
    organizationId: b.organizationId,
    pipelineId: b.pipelineId,
    pipelineSlug: b.pipelineSlug,
    number: b.number,
    state: b.state,
    blocked: b.blocked,
    message: b.message,
    commit: b.commit,
    branch: b.branch,
    env: JSON.parse(b.envJson) as Record<string, string>,
    source: b.source,
    creator: user(b.creator) ?? undefined,
    author: b.author ?? undefined,
    createdAt: toTimestamp(b.createdAt),
    scheduledAt: toTimestamp(b.scheduledAt),
    startedAt: toTimestamp(b.startedAt),
    finishedAt: toTimestamp(b.finishedAt),
    metaData: JSON.parse(b.metaDataJson) as Record<string, string>,
    pullRequest: b.pullRequest ?? undefined,
    rebuiltFrom: b.rebuiltFrom ?? undefined,
    cancelReason: b.cancelReason ?? "",
    cleanCheckout: b.cleanCheckout,
    jobs: jobs.map(jobMessage),
    version: b.version,
  };
}
