import type { EventHandler } from "./events/handler.js";
import type { NotificationsContext } from "./notifications-context.js";
import { createNotifyHandler } from "./notify/notify-handler.js";
import { createOrganizationWebhooksHandler } from "./webhooks/organization-webhooks-handler.js";

/**
 * Every handler that turns an event into deliveries (docs/notifications.md#from-event-to-delivery): add a handler here, one line
 * each. A handler reads what it needs (webhooks, pipelines, …) through the context and returns the deliveries it
 * wants; it never sends anything itself.
 */
export async function createHandlers(ctx: NotificationsContext): Promise<EventHandler[]> {
  return [
    createOrganizationWebhooksHandler(ctx.webhookCache, ctx.payloads),
    createNotifyHandler(ctx.notify),
    ...(ctx.commitStatuses ? [ctx.commitStatuses.handler] : []),
    ...ctx.extraHandlers,
  ];
}
