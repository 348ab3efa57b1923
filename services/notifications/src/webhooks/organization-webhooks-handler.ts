import { agentEventName, buildEventName, jobEventName } from "../domain/event-names.js";
import type { EventHandler } from "../events/handler.js";
import { type NotificationEvent, organizationOf } from "../events/notification-event.js";
import type { WebhookDoc, WebhookRepository } from "../store/webhook-repository.js";
import type { Payloads } from "./payloads.js";

/** Buildkite's name of an event, or null when no webhook hears it. */
export function webhookEventName(e: NotificationEvent): string | null {
  if (e.type === "build") return buildEventName(e.kind, e.build.state, e.previousState);
  if (e.type === "job") return jobEventName(e.job.type, e.job.state, e.previousState);
  return agentEventName(e.kind, e.agent.connectionState);
}

/** Whether a webhook wants an event: it chose the event, and its pipeline filter (if any) holds the build's pipeline. */
export function webhookWants(hook: Pick<WebhookDoc, "events" | "pipelineIds">, e: NotificationEvent, name: string) {
  if (!hook.events.includes(name)) return false;
  if (e.type === "agent" || hook.pipelineIds.length === 0) return true;
  const pipelineId = e.type === "build" ? e.build.pipelineId : e.pipelineId;
  return hook.pipelineIds.includes(pipelineId);
}

/** The delivery of one webhook's message (shared by events and ping). */
export function webhookIntent(hook: WebhookDoc, event: string, body: Record<string, unknown>) {
  return {
    kind: "webhook",
    event,
    targetKey: hook._id,
    webhookId: hook._id,
    host: new URL(hook.url).host,
    ordered: false,
    request: { webhookId: hook._id, url: hook.url, body: JSON.stringify(body) },
  };
}

/** The organization webhooks' handler: one delivery per webhook that wants the event. */
export function createOrganizationWebhooksHandler(
  webhooks: Pick<WebhookRepository, "list">,
  payloads: Payloads,
): EventHandler {
  return {
    name: "organization-webhooks",
    async intents(e) {
      const name = webhookEventName(e);
      if (!name) return [];
      const wanting = (await webhooks.list(organizationOf(e))).filter((h) => webhookWants(h, e, name));
      if (wanting.length === 0) return [];
      const body = await payloads.body(e, name);
      return body ? wanting.map((h) => webhookIntent(h, name, body)) : [];
    },
  };
}
