import type { Logger, OutboundClient } from "@conveyor/runtime";
import type { WebhookCache } from "./cache/webhook-cache.js";
import type { NotificationsConfig } from "./config.js";
import type { Channel } from "./dispatch/channel.js";
import type { EventHandler } from "./events/handler.js";
import type { NotifyHandlerDeps } from "./notify/notify-handler.js";
import type { CommitStatusParts } from "./statuses/commit-status-setup.js";
import type { DeliveryRepository } from "./store/delivery-repository.js";
import type { WebhookRepository } from "./store/webhook-repository.js";
import type { Payloads } from "./webhooks/payloads.js";

/** What the notifications service's parts share. */
export interface NotificationsContext {
  config: NotificationsConfig;
  /** Webhooks; writes through it drop and announce the organization's kept list (cache/webhook-cache.ts). */
  webhooks: WebhookRepository;
  /** An organization's webhooks as the event handler reads them, kept (docs/notifications.md#what-the-handlers-read). */
  webhookCache: Pick<WebhookCache, "list">;
  deliveries: DeliveryRepository;
  now: () => Date;
  logger: Logger;
  /** The one client for requests to addresses users give (docs/security.md#outbound-requests). */
  outbound: OutboundClient;
  /** The bodies of webhooks (REST's shapes). */
  payloads: Payloads;
  /** What the pipeline YAML's notify: needs (the services it reads, the links' bases). */
  notify: NotifyHandlerDeps;
  /** Handlers and channels a test adds to the listed ones (handlers.ts, channels.ts); empty in production. */
  extraHandlers: readonly EventHandler[];
  extraChannels: readonly Channel[];
  /** Commit statuses on the forges (docs/statuses.md); absent in tests that do not need them. */
  commitStatuses?: CommitStatusParts;
}
