import type { Delivery, Webhook } from "@conveyor/proto/notifications";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Int, NullableInt, NullableStr, NullableTimestamp, Str, Timestamp } from "./schemas.js";
import type { Urls } from "./urls.js";

/**
 * An organization notification webhook as REST shows it (docs/notifications.md#organization-webhooks; this project's
 * extension, Buildkite manages them on a settings page): never its token, which only the create answers.
 */
export function renderNotificationWebhook(w: Webhook, urls: Urls, orgSlug: string): NotificationWebhookBody {
  const url = urls.api(`organizations/${orgSlug}/webhooks/${w.id}`);
  return {
    id: w.id,
    url,
    deliveries_url: `${url}/deliveries`,
    webhook_url: w.url,
    events: w.events,
    pipeline_ids: w.pipelineIds,
    token_mode: w.tokenMode,
    description: w.description === "" ? null : w.description,
    created_at: isoTime(w.createdAt) ?? "",
  };
}

export const NotificationWebhookSchema = Type.Object(
  {
    id: Str,
    url: Str,
    deliveries_url: Str,
    webhook_url: Str,
    events: Type.Array(Str),
    pipeline_ids: Type.Array(Str),
    token_mode: Str,
    description: NullableStr,
    created_at: Timestamp,
  },
  { title: "NotificationWebhook" },
);
export type NotificationWebhookBody = Static<typeof NotificationWebhookSchema>;

/** The create's answer: the webhook and, this once, its token. */
export const CreatedNotificationWebhookSchema = Type.Composite(
  [NotificationWebhookSchema, Type.Object({ token: Str })],
  { title: "CreatedNotificationWebhook" },
);

/** One delivery of a webhook: what became of it, and its last attempt. */
export function renderWebhookDelivery(d: Delivery): WebhookDeliveryBody {
  return {
    id: d.id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    response_code: d.responseCode === 0 ? null : d.responseCode,
    error: d.error === "" ? null : d.error,
    duration_ms: d.attempts === 0 ? null : d.durationMs,
    created_at: isoTime(d.createdAt) ?? "",
    last_attempt_at: isoTime(d.lastAttemptAt),
    next_attempt_at: isoTime(d.nextAttemptAt),
    finished_at: isoTime(d.finishedAt),
  };
}

export const WebhookDeliverySchema = Type.Object(
  {
    id: Str,
    event: Str,
    status: Str,
    attempts: Int,
    response_code: NullableInt,
    error: NullableStr,
    duration_ms: NullableInt,
    created_at: Timestamp,
    last_attempt_at: NullableTimestamp,
    next_attempt_at: NullableTimestamp,
    finished_at: NullableTimestamp,
  },
  { title: "WebhookDelivery" },
);
export type WebhookDeliveryBody = Static<typeof WebhookDeliverySchema>;
