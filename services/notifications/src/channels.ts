import type { Channel } from "./dispatch/channel.js";
import type { NotificationsContext } from "./notifications-context.js";
import { createEmailChannel, createNotifyWebhookChannel, createSlackChannel } from "./notify/notify-channels.js";
import { createWebhookChannel } from "./webhooks/webhook-channel.js";

/**
 * Every delivery kind and the channel that sends it (docs/notifications.md#from-event-to-delivery): add a channel here, one line
 * each. Deliveries of a kind no channel sends fail at once, saying so.
 */
export async function createChannels(ctx: NotificationsContext): Promise<Channel[]> {
  return [
    createWebhookChannel(ctx.webhooks, ctx.outbound, ctx.now),
    createNotifyWebhookChannel(ctx.outbound),
    createSlackChannel(ctx.outbound),
    createEmailChannel(ctx.config.smtpUrl, ctx.config.smtpFrom),
    ...(ctx.commitStatuses ? [ctx.commitStatuses.channel] : []),
    ...ctx.extraChannels,
  ];
}
