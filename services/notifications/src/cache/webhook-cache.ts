import { type Logger, type NatsHandle, superviseLoop } from "@conveyor/runtime";
import type { WebhookDoc, WebhookRepository } from "../store/webhook-repository.js";
import { createKeyedCache, type KeyedCacheOptions } from "./keyed-cache.js";

/**
 * The core NATS subject (outside the events stream's `ci.>`, so JetStream keeps nothing) on which a replica says an
 * organization's webhooks changed; the payload is the organization's id.
 */
export const WEBHOOKS_CHANGED_SUBJECT = "notifications.webhooks_changed";

/**
 * An organization's webhooks as the event handler reads them, kept per organization (docs/notifications.md#what-the-handlers-read):
 * the service owns webhooks, so its own writes (through `repository`) drop the organization's list at once and are
 * announced to the other replicas (`announce`, on WEBHOOKS_CHANGED_SUBJECT); `ttlMs` bounds what a lost announcement
 * leaves stale. An organization without webhooks is kept as an empty list, so its events cost no read.
 */
export function createWebhookCache(
  webhooks: WebhookRepository,
  opts: KeyedCacheOptions & { announce?: (organizationId: string) => void },
) {
  const cache = createKeyedCache<WebhookDoc[]>(opts);
  const changed = (organizationId: string) => {
    cache.delete(organizationId);
    opts.announce?.(organizationId);
  };
  /** Runs a write, then drops the organization's list whatever the outcome. */
  const dropping =
    <A extends unknown[], R>(organizationOf: (...args: A) => string, write: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await write(...args);
      } finally {
        changed(organizationOf(...args));
      }
    };
  const repository: WebhookRepository = {
    ...webhooks,
    insert: dropping((doc) => doc.organizationId, webhooks.insert),
    update: dropping((organizationId) => organizationId, webhooks.update),
    remove: dropping((organizationId) => organizationId, webhooks.remove),
  };
  return {
    /** The repository whose writes drop and announce (the RPCs use it). */
    repository,
    /** The organization's webhooks, oldest first, kept. Readers must not change them. */
    list: (organizationId: string) => cache.get(organizationId, () => webhooks.list(organizationId)),
    /** Forgets an organization's list (another replica changed it). */
    evict: (organizationId: string) => cache.delete(organizationId),
    /** Forgets every list. */
    clear: () => cache.clear(),
    get size() {
      return cache.size;
    },
  };
}

export type WebhookCache = ReturnType<typeof createWebhookCache>;

/** Announces that an organization's webhooks changed, to every replica (this one included). */
export function announceWebhooksChanged(nats: Pick<NatsHandle, "nc">, organizationId: string): void {
  nats.nc.publish(WEBHOOKS_CHANGED_SUBJECT, organizationId);
}

/**
 * Drops an organization's kept webhooks when any replica announces a change; a plain subscription in a supervised
 * loop: one that breaks drops every list (it may have missed an announcement) and is opened again. Returns a
 * function that stops it.
 */
export function subscribeWebhookChanges(nats: Pick<NatsHandle, "nc">, cache: WebhookCache, logger: Logger) {
  const decoder = new TextDecoder();
  const loop = superviseLoop({
    name: `subscription.${WEBHOOKS_CHANGED_SUBJECT}`,
    logger,
    open() {
      const sub = nats.nc.subscribe(WEBHOOKS_CHANGED_SUBJECT);
      return { items: sub, close: () => sub.unsubscribe() };
    },
    handle(msg) {
      const organizationId = decoder.decode(msg.data);
      if (organizationId) cache.evict(organizationId);
    },
    onBreak: () => cache.clear(),
  });
  return () => loop.stop();
}
