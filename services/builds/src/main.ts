/**
 * The builds process: config, repositories, the read cache and its invalidation feed, the parts of the service
 * (builds-context.ts), the Connect services (builds-service.ts), and the background duties on their timers.
 */
import { AnnotationsService } from "@conveyor/proto/annotations";
import { BuildsService } from "@conveyor/proto/builds";
import {
  createMongoOutboxStore,
  jetStreamPublish,
  newId,
  type OutboxDoc,
  openFences,
  repeat,
  runService,
} from "@conveyor/runtime";
import { type BuildsDeps, createBuildsParts } from "./builds-context.js";
import { createAnnotationsService, createBuildsService } from "./builds-service.js";
import { readBuildsConfig } from "./config.js";
import { agentsQueueList } from "./creation/agents-queue-list.js";
import { createClusterQueueIds } from "./creation/cluster-queue-ids.js";
import { createLogChunkNotices } from "./jobs/log-chunk-notices.js";
import { createTriggerLookups } from "./jobs/trigger-lookups.js";
import { consumePipelineRemovals } from "./lifecycle/pipeline-removal.js";
import { startInvalidationFeed } from "./reads/cache-invalidation-feed.js";
import { openInvalidationStream } from "./reads/invalidation-stream.js";
import { createReadCache } from "./reads/read-cache.js";
import { createMongoAnnotationRepository } from "./store/annotation-repository.js";
import { createMongoBuildRepository } from "./store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
import { createMongoInvalidationBacklog } from "./store/invalidation-backlog-repository.js";
import { createMongoJobLogRepository } from "./store/job-log-repository.js";
import { createMongoPipelineUploadRepository } from "./store/pipeline-upload-repository.js";
import { createMongoWebhookDeliveryRepository } from "./store/webhook-delivery-repository.js";
import { createMongoWebhookPullRequestRepository } from "./store/webhook-pull-request-repository.js";

/** How often the counters of recently active pipelines are re-announced. */
const COUNTS_REPUBLISH_MS = 30_000;
/** How often the outbox relay looks for counters events that were not published. */
const OUTBOX_RELAY_MS = 2_000;
/** How often invalidations NATS could not take (kept in the backlog) are published again. */
const INVALIDATION_RELAY_MS = 1_000;
/** How often jobs whose agent never accepted them are looked for. */
const REQUEUE_SWEEP_MS = 10_000;
/** How often deadlines, expiries, trigger jobs and concurrency groups are looked at. */
const JOB_SWEEP_MS = 5_000;
/** How often webhook deliveries recorded but not carried out are looked for (their lease is 30 s). */
const WEBHOOK_RELAY_MS = 5_000;
/** How often webhook deliveries done long ago are forgotten. */
const WEBHOOK_SWEEP_MS = 3_600_000;
/** How often pipeline uploads a crash left unfinished (accepted, not applied, nobody polling) are completed. */
const UPLOAD_SWEEP_MS = 30_000;

void runService(
  {
    name: "builds",
    serviceNames: [BuildsService.typeName, AnnotationsService.typeName],
    async setup({ db, events, nats, logger, env }) {
      const config = readBuildsConfig(env);
      const [repo, logs, uploads, slots, annotations, outboxStore, deliveries, pullRequests] = await Promise.all([
        createMongoBuildRepository(db),
        createMongoJobLogRepository(db),
        createMongoPipelineUploadRepository(db),
        createMongoConcurrencySlotRepository(db),
        createMongoAnnotationRepository(db),
        createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
        createMongoWebhookDeliveryRepository(db),
        createMongoWebhookPullRequestRepository(db),
      ]);
      // One run at a time, paced by its cost: sweeps read what is queued, which grows with the data.
      const every = (ms: number, what: string, work: () => Promise<unknown>) =>
        repeat(work, { what, everyMs: ms, costFactor: 3, logger });
      // Builds and lists are served from memory while the cache invalidation feed proves them current (several replicas
      // included).
      let readCache: BuildsDeps["readCache"];
      if (config.readCacheBuilds > 0) {
        const cache = createReadCache({ maxBuilds: config.readCacheBuilds });
        const feed = await startInvalidationFeed({
          stream: await openInvalidationStream({ nc: nats.nc, js: nats.js, logger }),
          backlog: await createMongoInvalidationBacklog(db),
          cache,
          logger,
          newId,
        });
        readCache = { cache, feed };
        every(INVALIDATION_RELAY_MS, "invalidation relay", () => feed.relay());
      }
      const parts = createBuildsParts({
        repo,
        logs,
        uploads,
        slots,
        events,
        outbox: { store: outboxStore, publish: jetStreamPublish(nats.js) },
        logger,
        triggers: createTriggerLookups(config),
        logNotices: createLogChunkNotices(nats.nc, logger),
        fences: await openFences(nats.nc),
        webhooks: { deliveries, pullRequests },
        clusterQueues: createClusterQueueIds({ list: agentsQueueList(config.agentsUrl), logger }),
        ...config,
        ...(readCache ? { readCache } : {}),
      });
      const { duties } = parts;
      every(OUTBOX_RELAY_MS, "outbox relay", () => duties.relayOutbox());
      every(COUNTS_REPUBLISH_MS, "counters republish", () => duties.republishCounts());
      every(REQUEUE_SWEEP_MS, "stale assignment sweep", () => duties.requeueStale(config.assignTimeoutMs));
      every(JOB_SWEEP_MS, "job sweep", () => duties.sweepJobs());
      every(WEBHOOK_RELAY_MS, "webhook relay", () => duties.relayWebhooks());
      every(WEBHOOK_SWEEP_MS, "webhook retention sweep", () => duties.sweepWebhooks());
      every(UPLOAD_SWEEP_MS, "unfinished pipeline uploads", () => parts.upload.completeUnfinished());
      // Through the context's repository: its removals must reach every replica's read cache as any other write does.
      await consumePipelineRemovals(
        nats,
        { repo: parts.ctx.repo, logs, annotations, uploads, deliveries, pullRequests },
        logger,
      );
      const builds = createBuildsService(parts);
      const annotationsService = createAnnotationsService({ annotations, builds: parts.ctx.repo });
      return (router) => router.service(BuildsService, builds).service(AnnotationsService, annotationsService);
    },
  },
  process.env,
);
