import type { NotificationsContext } from "../notifications-context.js";

/** Organization webhooks: create, list, get, update, delete, and their deliveries. */
export function createWebhooksRpcs(_ctx: NotificationsContext, _delivered: () => void) {
  return {};
}
