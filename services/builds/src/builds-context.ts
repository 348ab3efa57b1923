/**
 * The builds service's dependency graph in one place. main.ts (or a test) hands in the repositories and services
 * (BuildsDeps); createBuildsContext makes what every part shares (BuildsContext: storage seen through the read cache,
 * the clock, per-build locks, events, the pipeline counters); createBuildsParts makes every part on it, in the order
 * they need each other. builds-service.ts assembles the RPCs from the parts, and main.ts runs their duties on timers.
 */

import { createKeyedLock, type EventPublisher, type Fences, type KeyedLock, type Logger } from "@conveyor/runtime";
import {
  type CountersOutboxDeps,
  createPipelineCounters,
  type PipelineCounters,
} from "./counters/pipeline-counters.js";
import { type BuildCreation, createBuildCreation } from "./creation/build-creation.js";
import { type ClusterQueueIds, noClusterQueueIds } from "./creation/cluster-queue-ids.js";
import { createCreationRepair } from "./creation/creation-repair.js";
import { type CurrentPipelines, createCurrentPipelines } from "./creation/current-pipelines.js";
import type { Build } from "./domain/build.js";
import type { Job } from "./domain/job.js";
import { createStateEvents, jobEvent, type StateEvents, stateEventResolvers } from "./events/state-events.js";
import { type ConcurrencyGate, createConcurrencyGate } from "./jobs/concurrency-gate.js";
import { createJobLogs, type JobLogs, type LogLimits } from "./jobs/job-logs.js";
import { createJobRetries, type JobRetries } from "./jobs/job-retries.js";
import { createJobSweeps, type SweepSettings } from "./jobs/job-sweeps.js";
import { createJobTransitions, type JobTransitions } from "./jobs/job-transitions.js";
import { createJobTriggers, type JobTriggers, type TriggerLookups } from "./jobs/job-triggers.js";
import { createJobUnblock, type JobUnblock } from "./jobs/job-unblock.js";
import type { LogChunkNotices } from "./jobs/log-chunk-notices.js";
import { createPipelineUpload, type PipelineUpload } from "./jobs/pipeline-upload.js";
import { createPromisedFailures, type PromisedFailures } from "./jobs/promised-failures.js";
import { createStepActions, type StepActions } from "./jobs/step-actions.js";
import { type BuildCancel, createBuildCancel } from "./lifecycle/build-cancel.js";
import { type CancelContinuation, createCancelContinuation } from "./lifecycle/cancel-continuation.js";
import { createReconcile, DEFAULT_RECONCILE_SETTINGS, type Reconcile } from "./lifecycle/reconcile.js";
import { type BuildMetaData, createBuildMetaData } from "./meta-data/build-meta-data.js";
import { type BuildReads, createBuildReads } from "./reads/build-reads.js";
import type { InvalidationFeed } from "./reads/cache-invalidation-feed.js";
import { withInvalidations } from "./reads/invalidating-repository.js";
import type { ReadCache } from "./reads/read-cache.js";
import type { BuildRepository } from "./store/build-repository.js";
import type { ConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
import type { JobLogRepository } from "./store/job-log-repository.js";
import { createMemoryWebhookDeliveryRepository } from "./store/memory-webhook-delivery-repository.js";
import { createMemoryWebhookPullRequestRepository } from "./store/memory-webhook-pull-request-repository.js";
import type { PipelineUploadRepository } from "./store/pipeline-upload-repository.js";
import { createWebhookInbox, type WebhookInbox, type WebhookInboxDeps } from "./webhooks/webhook-inbox.js";

/** What the builds service is made from: its repositories, the services it calls, and its settings. */
export interface BuildsDeps {
  repo: BuildRepository;
  logs: JobLogRepository;
  uploads: PipelineUploadRepository;
  slots: ConcurrencySlotRepository;
  events: EventPublisher;
  /** Where counters events wait until JetStream has them; without it, an in-memory outbox (tests). */
  outbox?: CountersOutboxDeps;
  logger: Logger;
  now?: () => Date;
  /**
   * The read cache of builds and lists and the feed that keeps every replica's current (read-cache.ts,
   * cache-invalidation-feed.ts). Without it, every read goes to the database.
   */
  readCache?: { cache: ReadCache; feed: InvalidationFeed };
  logLimits?: LogLimits;
  /** Announces stored log chunks to live pages (log-chunk-notices.ts); without it, none are announced. */
  logNotices?: LogChunkNotices;
  sweeps?: SweepSettings;
  /** The most job writes of a cancel in one reconcile (lifecycle/reconcile.ts); tests make it small. */
  cancelBatch?: number;
  /** Where trigger steps find their pipelines (trigger-lookups.ts); without it, a trigger finds none. */
  triggers?: TriggerLookups;
  /** The pipelines' fences (the runtime's fences): a caller's copy at least as new as its fence is not read again. */
  fences?: Pick<Fences, "read">;
  /** Where webhook deliveries and the pull requests they told of are kept; without it, in memory (tests). */
  webhooks?: WebhookInboxDeps;
  /**
   * Where new jobs find their cluster's queues (creation/cluster-queue-ids.ts); without it, none: a job names its queue
   * when an agent takes it.
   */
  clusterQueues?: ClusterQueueIds;
}

/** How often a compare-and-set loop retries before giving up (only under heavy contention on one build). */
export const MAX_ATTEMPTS = 20;

/** What every part of the builds service shares: storage, the clock, per-build locks and event publishing. */
export interface BuildsContext extends PipelineCounters {
  /** The repository; with a read cache, each of its writes is announced to every replica's cache. */
  repo: BuildRepository;
  /** The reads the RPCs answer from: a build with its jobs, a page of builds (cached when there is a cache). */
  reads: BuildReads;
  logs: JobLogRepository;
  logger: Logger;
  now: () => Date;
  /** Serializes the compare-and-set sections per build; see createKeyedLock. */
  withLock: KeyedLock;
  /** Writes of builds' and jobs' states with their events made durable first (events/state-events.ts). */
  stateEvents: StateEvents;
  /** Announces a job as it is without recording it (tests announcing what they stored behind the service's back). */
  publishJob(job: Job, previousState: string): Promise<void>;
  /** The ids of a cluster's queues, which new jobs name (creation/cluster-queue-ids.ts). */
  clusterQueues: ClusterQueueIds;
}

/** Creates the context every part of the builds service shares. */
export function createBuildsContext(
  deps: Pick<BuildsDeps, "repo" | "logs" | "events" | "outbox" | "logger" | "now" | "readCache" | "clusterQueues">,
): BuildsContext {
  const { events, logger, readCache } = deps;
  const repo = readCache ? withInvalidations(deps.repo, readCache.feed.publish, logger) : deps.repo;
  const now = deps.now ?? (() => new Date());
  const counters = createPipelineCounters({
    repo,
    events,
    outbox: deps.outbox,
    resolvers: stateEventResolvers(repo, now),
    logger,
    now,
  });
  return {
    ...counters,
    stateEvents: createStateEvents(repo, counters.outbox),
    repo,
    reads: createBuildReads(deps.repo, readCache),
    logs: deps.logs,
    logger,
    now,
    withLock: createKeyedLock(),
    clusterQueues: deps.clusterQueues ?? noClusterQueueIds,
    async publishJob(job, previousState) {
      await counters.outbox.publishUnrecorded(jobEvent(job, previousState));
    },
  };
}

/** The limits the service applies unless told otherwise. */
export const DEFAULT_LOG_LIMITS: LogLimits = { maxChunkBytes: 1024 * 1024, maxLogBytes: 256 * 1024 * 1024 };
export const DEFAULT_SWEEP_SETTINGS: SweepSettings = { scheduledExpiryMs: 24 * 3600_000, timeoutGraceMs: 120_000 };
/** Without the pipelines and identity services, a trigger finds no pipeline and fails saying so. */
const NO_TRIGGER_LOOKUPS: TriggerLookups = {
  pipeline: async () => null,
  mayBuild: async () => false,
  ruleAllows: async () => false,
};

/** The work the builds process runs on timers besides serving (main.ts says how often). */
export interface BuildsDuties {
  /** One pass of the outbox relay: republishes counters and state events whose publish failed or never happened. */
  relayOutbox(): Promise<unknown>;
  /** Re-announces the counters of pipelines with recent activity (pipeline-counters.ts). */
  republishCounts(): Promise<void>;
  /** Resolves once no counters announcement is under way (tests, shutdown). */
  countsIdle(): Promise<void>;
  /** Returns jobs assigned more than `afterMs` ago and never accepted to the queue; how many went back. */
  requeueStale(afterMs: number): Promise<number>;
  /** Times out running jobs past their deadline, ends those their agent never stopped, expires stale ones. */
  sweepJobs(): ReturnType<ReturnType<typeof createJobSweeps>["sweep"]>;
  /** Carries out webhook deliveries recorded but not carried out (webhooks/webhook-inbox.ts); how many. */
  relayWebhooks(): Promise<number>;
  /** Forgets webhook deliveries done long ago; how many. */
  sweepWebhooks(): Promise<number>;
}

/** Every part of the builds service, made on one context: what the RPCs and the duties are made of. */
export interface BuildsParts {
  ctx: BuildsContext;
  reconcile: Reconcile;
  cancel: BuildCancel;
  cancels: CancelContinuation;
  creation: BuildCreation;
  pipelines: CurrentPipelines;
  transitions: JobTransitions;
  retries: JobRetries;
  unblock: JobUnblock;
  upload: PipelineUpload;
  logs: JobLogs;
  metaData: BuildMetaData;
  triggers: JobTriggers;
  gate: ConcurrencyGate;
  webhooks: WebhookInbox;
  steps: StepActions;
  promiseFailure: PromisedFailures;
  duties: BuildsDuties;
}

/** Makes the context and every part on it, in the order they need each other. */
export function createBuildsParts(deps: BuildsDeps): BuildsParts {
  const ctx = createBuildsContext(deps);
  const retries = createJobRetries(ctx);
  // Triggers need the transitions, which need reconcile: the hook finds them once they exist.
  let triggers: JobTriggers | undefined;
  const gate = createConcurrencyGate(ctx, deps.slots);
  const settled = (build: Build, jobs: readonly Job[]) => {
    gate.settled(build, jobs);
    triggers?.settled(build, jobs);
  };
  // Unblocking needs reconcile, which first stores the fields of unblocked jobs: the hook finds it once it exists.
  let unblock: JobUnblock | undefined;
  const finishInterrupted = async (jobs: readonly Job[]) =>
    (await retries.completeInterrupted(jobs)) || ((await unblock?.storeUnblockFields(jobs)) ?? false);
  // The rest of a large cancel continues in the background, reconciling again (the hook finds reconcile once it exists).
  let reconcile: Reconcile | undefined;
  const cancels = createCancelContinuation(ctx, () => reconcile as Reconcile);
  reconcile = createReconcile(
    ctx,
    { finishInterrupted, settled, cancelLeft: (buildId, known) => cancels.start(buildId, known) },
    { cancelBatch: deps.cancelBatch ?? DEFAULT_RECONCILE_SETTINGS.cancelBatch },
  );
  const cancel = createBuildCancel(ctx, reconcile);
  const creation = createBuildCreation(ctx, cancel, settled);
  const transitions = createJobTransitions(ctx, reconcile, retries, (buildId) => cancels.start(buildId));
  const logs = createJobLogs(ctx, deps.logLimits ?? DEFAULT_LOG_LIMITS, deps.logNotices);
  const metaData = createBuildMetaData(ctx);
  unblock = createJobUnblock(ctx, reconcile, metaData);
  const upload = createPipelineUpload(ctx, reconcile, deps.uploads);
  triggers = createJobTriggers(ctx, creation, transitions, deps.triggers ?? NO_TRIGGER_LOOKUPS);
  const repair = createCreationRepair(ctx);
  const sweeps = createJobSweeps(
    ctx,
    transitions,
    [triggers, gate, repair, cancels],
    deps.sweeps ?? DEFAULT_SWEEP_SETTINGS,
  );
  const lookups = deps.triggers;
  const pipelines = createCurrentPipelines({
    ...(lookups ? { read: (organizationId: string, id: string) => lookups.pipeline(organizationId, id) } : {}),
    ...(deps.fences ? { fences: deps.fences } : {}),
    logger: ctx.logger,
  });
  const webhooks = createWebhookInbox(
    ctx,
    { creation, cancel, pipelines },
    deps.webhooks ?? {
      deliveries: createMemoryWebhookDeliveryRepository(),
      pullRequests: createMemoryWebhookPullRequestRepository(),
    },
  );

  return {
    ctx,
    reconcile,
    cancel,
    cancels,
    creation,
    pipelines,
    transitions,
    retries,
    unblock,
    upload,
    logs,
    metaData,
    triggers,
    gate,
    webhooks,
    steps: createStepActions(ctx, transitions),
    promiseFailure: createPromisedFailures(ctx, reconcile),
    duties: {
      relayOutbox: () => ctx.outbox.relay(),
      republishCounts: () => ctx.republishCounts(),
      countsIdle: () => ctx.countsIdle(),
      requeueStale: (afterMs) => transitions.requeueStale(new Date(ctx.now().getTime() - afterMs), 100),
      sweepJobs: () => sweeps.sweep(),
      relayWebhooks: () => webhooks.relay(),
      sweepWebhooks: () => webhooks.sweep(),
    },
  };
}
