import type { NotificationEvent } from "./notification-event.js";

/**
 * What a handler wants sent for one event: one delivery to one target. The consumer stores it (docs/notifications.md)
 * before the event is acknowledged, and the dispatcher hands it to the channel named by `kind` (channels.ts).
 */
export interface DeliveryIntent {
  /** The channel that sends it (webhook, email, slack, …). */
  kind: string;
  /** Buildkite's event name it announces (build.finished, …). */
  event: string;
  /** Names the target, so one event makes one delivery per target (a webhook's id, a URL, recipients…). */
  targetKey: string;
  /** The organization webhook it belongs to, whose delivery list shows it. */
  webhookId?: string;
  /** The host it goes to (the per-host bound); "" when none. */
  host: string;
  /** Whether deliveries of the same build to the same target must go one at a time in the events' order. */
  ordered: boolean;
  /** The channel's input, plain JSON (no Dates, no class instances). */
  request: Record<string, unknown>;
}

/** Turns events into deliveries. Handlers are listed in handlers.ts; each must be a pure read of its inputs. */
export interface EventHandler {
  /** Names it in logs. */
  name: string;
  intents(event: NotificationEvent): Promise<DeliveryIntent[]>;
}
