import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ManualStep } from "@conveyor/ci-rules";
import type { BlockFormSchema, BuildSchema, BuildUser, JobAgentSchema, JobSchema } from "@conveyor/proto/builds";
import { toTimestamp } from "@conveyor/runtime";
import type { Build, UserSnapshot } from "../domain/build.js";
import type { AgentSnapshot, Job } from "../domain/job.js";
import { manualRetryProblem } from "../domain/retries.js";

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

const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** A block or input step's prompt and fields as the BlockForm message (the step keeps fields as parsed YAML). */
export function blockFormMessage(step: ManualStep): MessageInitShape<typeof BlockFormSchema> {
  return {
    prompt: step.prompt ?? "",
    submit: step.submit ?? "",
    allowedTeams: step.allowed_teams ?? [],
    fields: (step.fields ?? []).map((f) => {
      const select = Object.hasOwn(f, "select");
      const given = f.default;
      const defaults = typeof given === "string" ? [given] : Array.isArray(given) ? given.map(str) : [];
      const options = select && Array.isArray(f.options) ? (f.options as unknown[]) : [];
      return {
        key: str(f.key),
        kind: select ? "select" : "text",
        label: str(select ? f.select : f.text),
        hint: str(f.hint),
        // Fields are required unless they say otherwise (ci-rules' unblockValues).
        required: f.required !== false,
        defaultValues: defaults.filter((d) => d !== ""),
        format: str(f.format),
        multiple: f.multiple === true,
        options: options.map((o) => {
          const option = (o ?? {}) as Record<string, unknown>;
          return { label: str(option.label) || str(option.value), value: str(option.value) };
        }),
      };
    }),
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
    clusterQueueId: j.clusterQueueId ?? "",
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
    matrix: j.matrix ?? {},
    signedStepJson: j.step.type === "script" && j.step.signed ? JSON.stringify(j.step.signed.step) : "",
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
    block: j.step.type === "manual" ? blockFormMessage(j.step) : undefined,
    manualRetryProblem: manualRetryProblem(j) ?? "",
    notifyJson: j.step.type === "script" && j.step.notify?.length ? JSON.stringify(j.step.notify) : "",
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
    pullRequest: b.pullRequest
      ? {
          id: b.pullRequest.id,
          base: b.pullRequest.base,
          repository: b.pullRequest.repository,
          labels: b.pullRequest.labels,
          draft: b.pullRequest.draft ?? undefined,
          fork: b.pullRequest.fork ?? undefined,
        }
      : undefined,
    tag: b.tag ?? "",
    sourceEvent: b.sourceEvent ?? "",
    sourceAction: b.sourceAction ?? "",
    rebuiltFrom: b.rebuiltFrom ?? undefined,
    triggeredFrom: b.triggeredFrom ?? undefined,
    cancelReason: b.cancelReason ?? "",
    cleanCheckout: b.cleanCheckout,
    jobs: jobs.map(jobMessage),
    version: b.version,
    uploadedNotifyJson: b.notifyUploads?.length ? JSON.stringify(b.notifyUploads.flatMap((u) => u.rules)) : "",
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
