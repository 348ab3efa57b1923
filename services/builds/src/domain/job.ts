/**
 * The one declaration of a job's shape in the builds service. JobModel (types.ts) is what the state machine reads;
 * a job planned from a step adds its JobDefinition; a stored job adds where it belongs and what happened to it.
 * The repository's storage form (JobDoc), its updates (JobUpdate) and what dispatch reads (DispatchableJob) are
 * derived from it; the proto Job and the REST Job are views of it.
 */
import { exactQueueOf, type MatrixPermutation, type PipelineStep, queueOf, type TriggerStep } from "@conveyor/ci-rules";
import type { UserSnapshot } from "./build.js";
import type { JobModel } from "./types.js";

/** A trigger job's target, as the step wrote it; defaults (branch, commit, message) are the caller's to fill. */
export interface PlannedTrigger {
  pipeline: string;
  async: boolean;
  build: NonNullable<TriggerStep["build"]>;
}

/** What a job is, from its step: everything but its progress. */
export interface JobDefinition {
  /** The step's label (script: `label`/`name`; block, input, trigger: `label`); "" for waiters. */
  name: string;
  /** The same as `name`: Buildkite's job `label` is the step label, parallel jobs included. */
  label: string;
  command: string | null;
  agentQueryRules: string[];
  /** The queue the agent query rules name, "default" when none; null for jobs no agent runs. */
  queue: string | null;
  env: Record<string, string>;
  artifactPaths: string | null;
  timeoutInMinutes: number | null;
  /** The step's `priority`, 0 when unset (higher runs first). */
  priority: number;
  /** 0-based index and count of a `parallelism` step's jobs; null for steps without `parallelism`. */
  parallelGroupIndex: number | null;
  parallelGroupTotal: number | null;
  /**
   * A matrix step's job: its combination (dimension → value, "" for the list form) and its place among the step's
   * jobs (docs/compatibility.md#build-matrix); null for other jobs.
   */
  matrix: MatrixPermutation | null;
  matrixIndex: number | null;
  concurrency: number | null;
  concurrencyGroup: string | null;
  trigger: PlannedTrigger | null;
  /** The step the job came from. */
  step: PipelineStep;
}

/** A job as created from its step: the state-machine fields plus its definition. */
export type PlannedJob = JobModel & JobDefinition;

/** The agent a job was assigned to, as it was then. */
export interface AgentSnapshot {
  id: string;
  name: string;
  hostname: string;
  ipAddress: string;
  userAgent: string;
  connectionState: string;
  createdAt: Date | null;
  /** Its tags, "key=value". */
  metaData: string[];
}

/** A job of a stored build. */
export interface Job extends PlannedJob {
  buildId: string;
  organizationId: string;
  pipelineId: string;
  buildNumber: number;
  /** A UUID per step of the build, shared by the step's parallel jobs. */
  stepId: string;
  /** The cluster of the pipeline when the job was created; null for an unclustered pipeline. */
  clusterId: string | null;
  /**
   * The cluster queue the job runs in (the object of its cluster and queue key): named when the job is made, from
   * the queue its rules name (clusterQueueIdOf), and set again when it is assigned, from the queue of the agent that
   * took it (which covers a queue pattern and jobs made while the agents service could not be asked); null while
   * neither said, and when its cluster has no such queue object.
   */
  clusterQueueId: string | null;
  agent: AgentSnapshot | null;
  /** How the process ended, as the agent reported it. */
  signal: string | null;
  signalReason: string | null;
  /** Line index of a log section header → when it was printed. */
  headerTimes: Record<string, string>;
  /** The attempt that replaced this one, when it was retried. */
  retriedInJobId: string | null;
  /** How many retries led to this attempt (0 for the first). */
  retriesCount: number;
  /** How this attempt was retried, once it was; before that, for a retry attempt, how it was made. */
  retryType: "automatic" | "manual" | null;
  /** The attempt this one retries, and how. */
  retrySource: { jobId: string; retryType: "automatic" | "manual" } | null;
  /** Who retried this attempt by hand. */
  retriedBy: UserSnapshot | null;
  /** Who unblocked this block step. */
  unblockedBy: UserSnapshot | null;
  /**
   * The meta-data an unblock's fields make, until it is stored: the build's next reconcile stores it before it
   * releases the jobs behind the block, then clears this.
   */
  unblockFields: Record<string, string> | null;
  /** Trigger jobs: the build they created, once it exists. */
  triggeredBuild: { id: string; number: number; pipelineSlug: string } | null;
  /** Why the job promised its failure, as its command said (promised-failure.ts); absent when it did not. */
  promisedFailureReason?: string | null;
  /** The idempotency uuids of the step updates applied to this job (domain/steps.ts), the latest last. */
  stepUpdateIds: string[];
  /** The marks of its latest announced writes (events/state-events.ts); absent on jobs stored before them. */
  eventMarks?: string[];
  /** When a running job times out (started + its timeout); null without a timeout. */
  deadlineAt: Date | null;
  createdAt: Date;
  scheduledAt: Date | null;
  runnableAt: Date | null;
  /** When it was last assigned to an agent. */
  assignedAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  unblockedAt: Date | null;
}

/**
 * A build's jobs in their order: by step, then parallel or matrix index, then age (retries after what they retried).
 */
export const jobOrder = (a: Job, b: Job): number =>
  a.stepPosition - b.stepPosition ||
  (a.parallelGroupIndex ?? -1) - (b.parallelGroupIndex ?? -1) ||
  (a.matrixIndex ?? -1) - (b.matrixIndex ?? -1) ||
  a.createdAt.getTime() - b.createdAt.getTime();

/** The queue a job's agent query rules name: the value of its `queue=` rule, else "default" (the rule dispatch uses). */
export { queueOf };

/** A cluster's queue objects' ids by key (null when they could not be read: see creation/cluster-queue-ids.ts). */
export type QueueIds = ReadonlyMap<string, string> | null;

/**
 * The cluster queue a new command job names (docs/compatibility.md#clusters-and-queues): the queue object of its
 * cluster whose key is the one queue its rules name ("default" when none), as dispatch matches it
 * (@conveyor/ci-rules exactQueueOf); null for other jobs, a queue pattern, or a cluster without that queue object.
 */
export function clusterQueueIdOf(p: Pick<PlannedJob, "type" | "agentQueryRules">, queueIds: QueueIds): string | null {
  if (p.type !== "script" || !queueIds || queueIds.size === 0) return null;
  const key = exactQueueOf(p.agentQueryRules);
  return key === null ? null : (queueIds.get(key) ?? null);
}

/** Where a new job belongs: its build, and the step it comes from. */
export type JobPlace = Pick<Job, "buildId" | "organizationId" | "pipelineId" | "buildNumber" | "clusterId" | "stepId">;

/**
 * A planned job as stored when its build is created or a pipeline upload adds it: nothing has happened to it. It
 * names its cluster queue from `queueIds`, its cluster's queues (clusterQueueIdOf).
 */
export function storedJob(p: PlannedJob, place: JobPlace, at: Date, queueIds: QueueIds = null): Job {
  return {
    ...p,
    ...place,
    allowFailureOf: p.allowFailureOf ?? [],
    agent: null,
    clusterQueueId: place.clusterId === null ? null : clusterQueueIdOf(p, queueIds),
    signal: null,
    signalReason: null,
    headerTimes: {},
    retriedInJobId: null,
    retriesCount: 0,
    retryType: null,
    retrySource: null,
    retriedBy: null,
    unblockedBy: null,
    unblockFields: null,
    triggeredBuild: null,
    stepUpdateIds: [],
    deadlineAt: null,
    createdAt: at,
    scheduledAt: p.state === "scheduled" ? at : null,
    runnableAt: p.state === "scheduled" ? at : null,
    assignedAt: null,
    startedAt: null,
    finishedAt: ["broken", "skipped", "passed"].includes(p.state) ? at : null,
    unblockedAt: null,
  };
}
