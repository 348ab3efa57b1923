import {
  createMongoOutboxStore,
  type Env,
  type EventPublisher,
  type Logger,
  type NatsHandle,
  newId,
  type OutboxDoc,
  openFences,
  type RawPublish,
  repeat,
} from "@conveyor/runtime";
import type { Db } from "mongodb";
import { createBuildDomain } from "./build-service.js";
import { readBuildsConfig } from "./config.js";
import { createTriggerLookups } from "./jobs/trigger-lookups.js";
import { consumePipelineRemovals } from "./lifecycle/pipeline-removal.js";
import { startTouchBus, type TouchBacklogDoc } from "./reads/cache-invalidation-feed.js";
import { createReadCache } from "./reads/read-cache.js";
import { createAnnotationsService } from "./rpc/annotations-rpc.js";
import { createMongoAnnotationRepository } from "./store/annotation-repository.js";
import { createMongoBuildRepository } from "./store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
import { createMongoJobLogRepository } from "./store/job-log-repository.js";
import { createMongoPipelineUploadRepository } from "./store/pipeline-upload-repository.js";

/** How often the counters of recently active pipelines are re-announced. */
const COUNTS_REPUBLISH_MS = 30_000;
/** How often the outbox relay looks for counters events that were not published. */
const OUTBOX_RELAY_MS = 2_000;
/** How often touches NATS could not take are published again. */
const TOUCH_RELAY_MS = 1_000;
/** How often jobs whose agent never accepted them are looked for. */
const REQUEUE_SWEEP_MS = 10_000;
/** How often deadlines, expiries, trigger jobs and concurrency groups are looked at. */
const JOB_SWEEP_MS = 5_000;

/**
 * Everything the builds process serves and runs: the builds and annotations services over their MongoDB
 * repositories, and the background duties (counters, stale assignments, the job sweeps), each on its own timer.
 */
export async function startBuildsProcess(opts: {
  db: Db;
  events: EventPublisher;
  /** JetStream publishing with a de-duplication id, for the outbox. */
  publish: RawPublish;
  /** For the durable consumer of pipeline deletions (absent in tests that run no consumers). */
  nats?: NatsHandle;
  logger: Logger;
  env: Env;
}) {
  const { db, events, logger, env } = opts;
  const config = readBuildsConfig(env);
  const [repo, logs, uploads, slots, annotations, outboxStore] = await Promise.all([
    createMongoBuildRepository(db),
    createMongoJobLogRepository(db),
    createMongoPipelineUploadRepository(db),
    createMongoConcurrencySlotRepository(db),
    createMongoAnnotationRepository(db),
    createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
  ]);
  const triggers = createTriggerLookups(config);
  const outbox = { store: outboxStore, publish: opts.publish };
  // One run at a time, paced by its cost: sweeps read what is queued, which grows with the data.
  const every = (ms: number, what: string, work: () => Promise<unknown>) =>
    repeat(work, { what, everyMs: ms, costFactor: 3, logger });
  // Builds and lists are served from memory while the touch bus proves them current (several replicas included).
  let readCache:
    | { cache: ReturnType<typeof createReadCache>; bus: Awaited<ReturnType<typeof startTouchBus>> }
    | undefined;
  if (opts.nats && config.readCacheBuilds > 0) {
    const cache = createReadCache({ maxBuilds: config.readCacheBuilds });
    const backlog = db.collection<TouchBacklogDoc>("build_touch_backlog");
    const bus = await startTouchBus({ nc: opts.nats.nc, js: opts.nats.js, backlog, cache, logger, newId });
    readCache = { cache, bus };
    every(TOUCH_RELAY_MS, "touch relay", () => bus.relay());
  }
  const domain = createBuildDomain({
    repo,
    logs,
    uploads,
    slots,
    events,
    outbox,
    logger,
    triggers,
    ...(opts.nats ? { fences: await openFences(opts.nats.nc) } : {}),
    ...config,
    ...(readCache ? { readCache } : {}),
  });
  every(OUTBOX_RELAY_MS, "outbox relay", () => domain.relayOutbox());
  every(COUNTS_REPUBLISH_MS, "counters republish", () => domain.republishCounts());
  every(REQUEUE_SWEEP_MS, "stale assignment sweep", () => domain.requeueStale(config.assignTimeoutMs));
  every(JOB_SWEEP_MS, "job sweep", () => domain.sweepJobs());
  // Through the domain's repository: its removals must reach every replica's read cache as any other write does.
  if (opts.nats) await consumePipelineRemovals(opts.nats, { repo: domain.repo, logs, annotations, uploads }, logger);
  return { builds: domain.service, annotations: createAnnotationsService({ annotations, builds: domain.repo }) };
}
