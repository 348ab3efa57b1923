import type { ServiceImpl } from "@connectrpc/connect";
import type { NotificationsService } from "@conveyor/proto/notifications";
import type { NotificationsContext } from "./notifications-context.js";
import { createWebhooksRpcs } from "./rpc/webhooks-rpc.js";

/** The notifications service: organization webhooks and their deliveries. */
export function createNotificationsService(
  ctx: NotificationsContext,
  delivered: () => void,
): ServiceImpl<typeof NotificationsService> {
  return { ...createWebhooksRpcs(ctx, delivered) };
}
