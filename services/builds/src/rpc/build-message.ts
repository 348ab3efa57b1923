import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { BuildSchema, BuildUser, JobAgentSchema, JobSchema } from "@conveyor/proto/builds";
import { toTimestamp } from "@conveyor/runtime";
import type { Build, UserSnapshot } from "../domain/build.js";
import type { AgentSnapshot, Job } from "../domain/job.js";

const user = (u: UserSnapshot | null) =>
  u && { id: u.id, name: u.name, email: u.email, avatarUrl: u.avatarUrl ?? "", createdAt: toTimestamp(u.createdAt) };

/** An agent snapshot as the JobAgent message. */
export function agentMessage(a: AgentSnapshot): MessageInitShape<typeof JobAgentSchema> {
  return {
    id: a.id,
    name: a.name,
    hostname: a.hostname,
    ipAddress: a.ipAddress,
    userAgent: a.userAgent,
    connectionState: a.connectionState,
    createdAt: toTimestamp(a.createdAt),
    metaData: a.metaData,
  };
}

/** A job as the Job message. */
export function jobMessage(j: Job): MessageInitShape<typeof JobSchema> {
  return {
    id: j.id,
    buildId: j.buildId,
    organizationId: j.organizationId,
    pipelineId: j.pipelineId,
    buildNumber: j.buildNumber,
    type: j.type,
    name: j.name,
    label: j.label,
    stepKey: j.stepKey ?? "",
    clusterId: j.clusterId ?? "",
    queue: j.queue ?? "",
    stepId: j.stepId,
    stepPosition: j.stepPosition,
    state: j.state,
    command: j.command ?? "",
    agentQueryRules: j.agentQueryRules,
    env: j.env,
    artifactPaths: j.artifactPaths ?? "",
    timeoutInMinutes: j.timeoutInMinutes ?? undefined,
    priority: j.priority,
    parallelGroupIndex: j.parallelGroupIndex ?? undefined,
    parallelGroupTotal: j.parallelGroupTotal ?? undefined,
    exitStatus: j.exitStatus ?? undefined,
    signal: j.signal ?? "",
    signalReason: j.signalReason ?? "",
    softFailed: j.softFailed,
    retried: j.retried,
    retriedInJobId: j.retriedInJobId ?? "",
    retriesCount: j.retriesCount,
    retryType: j.retryType ?? "",
    retrySource: j.retrySource ?? undefined,
    retriedBy: user(j.retriedBy) ?? undefined,
    unblockedBy: user(j.unblockedBy) ?? undefined,
    brokenReason: j.brokenReason ?? "",
    dependsOn: j.dependsOn,
    allowDependencyFailure: j.allowDependencyFailure,
    allowFailureOf: j.allowFailureOf ?? [],
    continueOnFailure: j.continueOnFailure,
    blockedState: j.blockedState ?? "",
    isInput: j.isInput,
    agent: j.agent ? agentMessage(j.agent) : undefined,
    createdAt: toTimestamp(j.createdAt),
    scheduledAt: toTimestamp(j.scheduledAt),
    runnableAt: toTimestamp(j.runnableAt),
    startedAt: toTimestamp(j.startedAt),
    finishedAt: toTimestamp(j.finishedAt),
    unblockedAt: toTimestamp(j.unblockedAt),
    triggerPipeline: j.trigger?.pipeline ?? "",
    triggerAsync: j.trigger?.async ?? false,
    triggeredBuild: j.triggeredBuild ?? undefined,
  };
}

/** A build (and its jobs, when given) as the Build message. */
export function buildMessage(b: Build, jobs: readonly Job[] = []): MessageInitShape<typeof BuildSchema> {
  return {
    id: b.id,
    organizationId: b.organizationId,
    pipelineId: b.pipelineId,
    pipelineSlug: b.pipelineSlug,
    number: b.number,
    state: b.state,
    blocked: b.blocked,
    message: b.message,
    commit: b.commit,
    branch: b.branch,
    env: b.env,
    source: b.source,
    creator: user(b.creator) ?? undefined,
    author: b.author ?? undefined,
    createdAt: toTimestamp(b.createdAt),
    scheduledAt: toTimestamp(b.scheduledAt),
    startedAt: toTimestamp(b.startedAt),
    finishedAt: toTimestamp(b.finishedAt),
    metaData: b.metaData,
    pullRequest: b.pullRequest ?? undefined,
    rebuiltFrom: b.rebuiltFrom ?? undefined,
    triggeredFrom: b.triggeredFrom ?? undefined,
    cancelReason: b.cancelReason ?? "",
    cleanCheckout: b.cleanCheckout,
    jobs: jobs.map(jobMessage),
    version: b.version,
  };
}

/** A user from a request, as builds and jobs record them; null when absent. */
export function userSnapshot(u: BuildUser | undefined): UserSnapshot | null {
  if (!u || u.id === "") return null;
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    avatarUrl: u.avatarUrl || null,
    createdAt: u.createdAt ? timestampDate(u.createdAt) : null,
  };
}
