/** How builds and jobs are stored in MongoDB, and the conversions both ways. */

import type { Build, BuildPullRequest } from "../domain/build.js";
import { type Job, queueOf } from "../domain/job.js";
import type { BuildUpdate, CreationClaim } from "./build-repository.js";

/** Build fields added after the first builds were stored: absent on older documents, read as their empty value. */
type LaterBuildFields = "tag" | "sourceEvent" | "sourceAction";

/**
 * How a build is stored: user maps (env, meta-data, the pipeline's env) whose keys may hold dots are JSON text,
 * which document stores restrict; `metaPairs` ("key=value") serve the meta_data filter. A pull request stored before
 * labels, draft and fork were kept lacks them.
 */
export type BuildDoc = Omit<Build, "id" | "env" | "metaData" | "pipeline" | "pullRequest" | LaterBuildFields> &
  Partial<Pick<Build, LaterBuildFields>> & {
    pullRequest: (Pick<BuildPullRequest, "id" | "base" | "repository"> & Partial<BuildPullRequest>) | null;
    _id: string;
    envJson: string;
    metaDataJson: string;
    metaPairs: string[];
    pipelineInfo?: Omit<Build["pipeline"], "env">;
    pipelineEnvJson?: string;
  };

/** Job fields stored as JSON text: maps and nested step data, for the same reason. */
type JsonJobFields = "env" | "softFail" | "step" | "trigger" | "matrix";
/** Job fields added after the first jobs were stored: absent on older documents, read as their empty value. */
type LaterJobFields =
  | "queue"
  | "signal"
  | "signalReason"
  | "assignedAt"
  | "headerTimes"
  | "retriedInJobId"
  | "retriesCount"
  | "retryType"
  | "retrySource"
  | "retriedBy"
  | "unblockedBy"
  | "deadlineAt"
  | "triggeredBuild"
  | "unblockFields"
  | "clusterId"
  | "clusterQueueId"
  | "stepUpdateIds";

/**
 * How a job is stored: the Job, with its id as _id, its JSON fields as text, and the fields added later optional.
 * Every other field is stored under its own name (a JobUpdate is $set as it is).
 */
export type JobDoc = Omit<Job, "id" | "stepPosition" | JsonJobFields | LaterJobFields> &
  Partial<Pick<Job, LaterJobFields>> & {
    _id: string;
    /** The job's stepPosition, under the name it had when positions were whole step indexes (indexes use it). */
    stepIndex: number;
    envJson: string;
    softFailJson: string;
    stepJson: string;
    triggerJson: string | null;
    /** A matrix job's combination (its dimension names may be "", which documents cannot hold); absent on others. */
    matrixJson?: string | null;
    /** How many header times the job holds (their compare-and-set); absent on jobs given none since it was kept. */
    headerTimesHeld?: number | null;
  };

const metaPairs = (metaData: Record<string, string>) => Object.entries(metaData).map(([k, v]) => `${k}=${v}`);

/** A creation's claim as stored: its build id is its _id, so one claim stands per build. */
export type ClaimDoc = Omit<CreationClaim, "buildId"> & { _id: string };

/** A build as stored. */
export function toBuildDoc(b: Build): BuildDoc {
  const { id, env, metaData, pipeline, ...rest } = b;
  const { env: pipelineEnv, ...pipelineInfo } = pipeline;
  return {
    ...rest,
    _id: id,
    envJson: JSON.stringify(env),
    metaDataJson: JSON.stringify(metaData),
    metaPairs: metaPairs(metaData),
    pipelineInfo,
    pipelineEnvJson: JSON.stringify(pipelineEnv),
  };
}

/** A stored build, with the defaults of fields older documents lack. */
export function fromBuildDoc(d: BuildDoc): Build {
  const { _id, envJson, metaDataJson, metaPairs: _pairs, pipelineInfo, pipelineEnvJson, ...rest } = d;
  return {
    ...rest,
    id: _id,
    env: JSON.parse(envJson) as Record<string, string>,
    metaData: JSON.parse(metaDataJson) as Record<string, string>,
    pipeline: {
      name: pipelineInfo?.name ?? d.pipelineSlug,
      repository: pipelineInfo?.repository ?? "",
      defaultBranch: pipelineInfo?.defaultBranch ?? "",
      providerId: pipelineInfo?.providerId ?? "git",
      organizationSlug: pipelineInfo?.organizationSlug ?? "",
      env: pipelineEnvJson ? (JSON.parse(pipelineEnvJson) as Record<string, string>) : {},
      timeouts: pipelineInfo?.timeouts ?? { default: null, maximum: null },
    },
    triggeredFrom: d.triggeredFrom ?? null,
    pullRequest: d.pullRequest ? { labels: [], draft: null, fork: null, ...d.pullRequest } : null,
    tag: d.tag ?? null,
    sourceEvent: d.sourceEvent ?? null,
    sourceAction: d.sourceAction ?? null,
  };
}

/** A job as stored. */
export function toJobDoc(j: Job): JobDoc {
  const { id, stepPosition, env, softFail, step, trigger, matrix, ...rest } = j;
  return {
    ...rest,
    _id: id,
    stepIndex: stepPosition,
    envJson: JSON.stringify(env),
    softFailJson: JSON.stringify(softFail),
    stepJson: JSON.stringify(step),
    triggerJson: trigger ? JSON.stringify(trigger) : null,
    matrixJson: matrix ? JSON.stringify(matrix) : null,
  };
}

/** A stored job, with the defaults of fields older documents lack. */
export function fromJobDoc(d: JobDoc): Job {
  const {
    _id,
    stepIndex,
    envJson,
    softFailJson,
    stepJson,
    triggerJson,
    matrixJson,
    headerTimesHeld: _held,
    ...rest
  } = d;
  return {
    ...rest,
    id: _id,
    stepPosition: stepIndex,
    env: JSON.parse(envJson) as Job["env"],
    softFail: JSON.parse(softFailJson) as Job["softFail"],
    step: JSON.parse(stepJson) as Job["step"],
    trigger: triggerJson ? (JSON.parse(triggerJson) as Job["trigger"]) : null,
    matrix: matrixJson ? (JSON.parse(matrixJson) as Job["matrix"]) : null,
    matrixIndex: d.matrixIndex ?? null,
    queue: d.queue !== undefined ? d.queue : d.type === "script" ? queueOf(d.agentQueryRules) : null,
    signal: d.signal ?? null,
    signalReason: d.signalReason ?? null,
    assignedAt: d.assignedAt ?? null,
    headerTimes: d.headerTimes ?? {},
    retriedInJobId: d.retriedInJobId ?? null,
    retriesCount: d.retriesCount ?? 0,
    retryType: d.retryType ?? null,
    retrySource: d.retrySource ?? null,
    retriedBy: d.retriedBy ?? null,
    unblockedBy: d.unblockedBy ?? null,
    deadlineAt: d.deadlineAt ?? null,
    triggeredBuild: d.triggeredBuild ?? null,
    unblockFields: d.unblockFields ?? null,
    stepUpdateIds: d.stepUpdateIds ?? [],
    agent: d.agent ? { ...d.agent, metaData: d.agent.metaData ?? [] } : null,
    clusterId: d.clusterId ?? null,
    clusterQueueId: d.clusterQueueId ?? null,
  };
}

/** A build update as stored: meta-data becomes its JSON text and pairs. */
export function storedBuildUpdate(update: BuildUpdate): Partial<BuildDoc> {
  const { metaData, ...rest } = update;
  return metaData === undefined
    ? rest
    : { ...rest, metaDataJson: JSON.stringify(metaData), metaPairs: metaPairs(metaData) };
}
