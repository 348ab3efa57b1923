/**
 * The notifications process: config, repositories, the durable consumers of the build and agent events that store
 * deliveries, the dispatcher that sends them, the retention sweep, and the Connect service (docs/notifications.md).
 */

import { BuildsService } from "@conveyor/proto/builds";
import { IdentityService } from "@conveyor/proto/identity";
import { NotificationsService } from "@conveyor/proto/notifications";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { SourceProvidersService } from "@conveyor/proto/source-providers";
import {
  createOutboundClient,
  createServiceClient,
  readOutboundConfig,
  repeat,
  runService,
  subscribePipelineEvents,
} from "@conveyor/runtime";
import { createPipelineCache } from "./cache/pipeline-cache.js";
import { announceWebhooksChanged, createWebhookCache, subscribeWebhookChanges } from "./cache/webhook-cache.js";
import { createChannels } from "./channels.js";
import { readNotificationsConfig } from "./config.js";
import { createDispatcher } from "./dispatch/dispatcher.js";
import { consumeNotificationEvents } from "./events/event-consumer.js";
import { createEventRecorder } from "./events/event-recorder.js";
import { createHandlers } from "./handlers.js";
import type { NotificationsContext } from "./notifications-context.js";
import { createNotificationsService } from "./notifications-service.js";
import { createCommitStatusParts } from "./statuses/commit-status-setup.js";
import { createMongoDeliveryRepository } from "./store/delivery-repository.js";
import { createMongoWebhookRepository } from "./store/webhook-repository.js";
import { createPayloads } from "./webhooks/payloads.js";

/** How often finished deliveries older than NOTIFY_KEEP_HOURS are removed. */
const RETENTION_SWEEP_MS = 600_000;

void runService(
  {
    name: "notifications",
    serviceNames: [NotificationsService.typeName, SourceProvidersService.typeName],
    async setup({ db, nats, logger, env, config: backend }) {
      const config = readNotificationsConfig(env);
      const [storedWebhooks, deliveries] = await Promise.all([
        createMongoWebhookRepository(db),
        createMongoDeliveryRepository(db),
      ]);
      // What the handlers read of pipelines and webhooks, kept current by events (docs/notifications.md#what-the-handlers-read).
      const pipelines = createPipelineCache(
        createServiceClient(PipelinesService, config.serviceUrls.pipelines),
        config.cache,
      );
      subscribePipelineEvents(nats, pipelines, logger);
      const webhookCache = createWebhookCache(storedWebhooks, {
        ...config.cache,
        announce: (organizationId) => announceWebhooksChanged(nats, organizationId),
      });
      subscribeWebhookChanges(nats, webhookCache, logger);
      const webhooks = webhookCache.repository;
      // The one client for addresses users give (docs/security.md#outbound-requests).
      const outbound = createOutboundClient(readOutboundConfig(env));
      const commitStatuses = await createCommitStatusParts({
        db,
        env,
        logger,
        outbound,
        now: () => new Date(),
        pipelines,
      });
      const reads = {
        identity: createServiceClient(IdentityService, config.serviceUrls.identity),
        pipelines,
        builds: createServiceClient(BuildsService, config.serviceUrls.builds),
        publicUrl: config.publicUrl,
        webUrl: config.webUrl,
      };
      const payloads = createPayloads(reads);
      const ctx: NotificationsContext = {
        config,
        webhooks,
        webhookCache,
        deliveries,
        now: () => new Date(),
        logger,
        outbound,
        payloads,
        notify: { ...reads, payloads },
        extraHandlers: [],
        extraChannels: [],
        commitStatuses,
      };
      const dispatcher = createDispatcher({
        deliveries,
        channels: await createChannels(ctx),
        config: config.dispatch,
        now: ctx.now,
        logger,
      });
      // A look at once when this process stored deliveries; the timer finds the others' and the retries.
      let nudged = false;
      const nudge = () => {
        if (nudged) return;
        nudged = true;
        setImmediate(() => {
          nudged = false;
          dispatcher.dispatchDue().catch((err: unknown) => logger.warn({ err }, "dispatch failed"));
        });
      };
      repeat(() => dispatcher.dispatchDue(), {
        what: "notifications dispatch",
        everyMs: config.dispatchEveryMs,
        logger,
      });
      repeat(
        async () => {
          const removed = await deliveries.removeFinishedBefore(new Date(Date.now() - config.keepFinishedMs), 1000);
          if (removed > 0) logger.info({ removed }, "old deliveries removed");
        },
        { what: "deliveries retention sweep", everyMs: RETENTION_SWEEP_MS, logger },
      );
      const record = createEventRecorder({
        handlers: await createHandlers(ctx),
        deliveries,
        now: ctx.now,
        retryForMs: config.retryForMs,
        maxPendingPerOrganization: config.maxPendingPerOrganization,
        stored: nudge,
      });
      await consumeNotificationEvents(nats, record, logger, backend.mongodbDatabase);
      return (router) =>
        router
          .service(NotificationsService, createNotificationsService(ctx, nudge))
          .service(SourceProvidersService, commitStatuses.rpcs);
    },
  },
  process.env,
);
