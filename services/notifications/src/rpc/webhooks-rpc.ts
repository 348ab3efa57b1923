import { randomBytes } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type {
  CreateWebhookRequest,
  DeleteWebhookRequest,
  GetWebhookRequest,
  ListWebhookDeliveriesRequest,
  ListWebhooksRequest,
  UpdateWebhookRequest,
  WebhookInput,
} from "@conveyor/proto/notifications";
import { failedPrecondition, invalidFields, isUuid, newId, notFound } from "@conveyor/runtime";
import { type TokenMode, type WebhookFields, webhookProblems } from "../domain/webhook-rules.js";
import { deliveryOf } from "../events/event-recorder.js";
import type { NotificationsContext } from "../notifications-context.js";
import type { DeliveryDoc } from "../store/delivery-repository.js";
import type { WebhookChanges, WebhookDoc } from "../store/webhook-repository.js";
import { webhookIntent } from "../webhooks/organization-webhooks-handler.js";

/** How many deliveries of a webhook REST shows (Buildkite shows the last 20). */
export const DELIVERIES_SHOWN = 20;

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

function webhookMessage(d: WebhookDoc) {
  return {
    id: d._id,
    organizationId: d.organizationId,
    url: d.url,
    events: d.events,
    pipelineIds: d.pipelineIds,
    tokenMode: d.tokenMode,
    description: d.description,
    createdAt: timestampFromDate(d.createdAt),
    createdBy: d.createdBy,
  };
}

function deliveryMessage(d: DeliveryDoc) {
  return {
    id: d._id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    responseCode: d.responseCode,
    error: d.error,
    durationMs: d.durationMs,
    createdAt: timestampFromDate(d.createdAt),
    lastAttemptAt: ts(d.lastAttemptAt),
    nextAttemptAt: d.status === "pending" ? ts(d.nextAttemptAt) : undefined,
    finishedAt: ts(d.finishedAt),
  };
}

const fieldsOf = (w: WebhookInput | undefined): WebhookFields => ({
  url: w?.url ?? "",
  events: [...(w?.events ?? [])],
  pipelineIds: (w?.pipelineIds ?? []).map((id) => id.toLowerCase()),
  tokenMode: (w?.tokenMode || "token") as TokenMode,
  description: w?.description ?? "",
});

const MASK: Record<string, keyof WebhookFields> = {
  webhook_url: "url",
  events: "events",
  pipeline_ids: "pipelineIds",
  token_mode: "tokenMode",
  description: "description",
};

/** Organization webhooks: create (with a ping), list, get, update, delete, and their last deliveries. */
export function createWebhooksRpcs(ctx: NotificationsContext, delivered: () => void) {
  const { webhooks, deliveries } = ctx;
  const find = async (organizationId: string, id: string) => {
    const hook = isUuid(organizationId) && isUuid(id) ? await webhooks.get(organizationId, id.toLowerCase()) : null;
    if (!hook) throw notFound("webhook");
    return hook;
  };

  return {
    async createWebhook(req: CreateWebhookRequest) {
      if (!isUuid(req.organizationId)) throw notFound("organization");
      const fields = fieldsOf(req.webhook);
      const problems = webhookProblems(fields);
      if (problems.length > 0) throw invalidFields(problems);
      const token = randomBytes(32).toString("hex");
      const doc: WebhookDoc = {
        _id: newId(),
        organizationId: req.organizationId.toLowerCase(),
        ...fields,
        token,
        createdAt: ctx.now(),
        createdBy: req.createdBy,
      };
      if (!(await webhooks.insert(doc, ctx.config.maxWebhooksPerOrganization))) {
        throw failedPrecondition(
          `an organization has at most ${ctx.config.maxWebhooksPerOrganization} webhooks; remove one first`,
        );
      }
      // Buildkite sends `ping` when a webhook is made.
      const ping = webhookIntent(doc, "ping", {
        event: "ping",
        service: { id: doc._id, provider: "webhook", settings: { url: doc.url } },
        organization: { id: doc.organizationId },
        sender: req.createdBy ? { id: req.createdBy } : null,
      });
      const pingDoc = deliveryOf(
        ping,
        { organizationId: doc.organizationId, buildId: "", seq: 0 },
        `ping\0${doc._id}`,
        ctx.now(),
        ctx.config.retryForMs,
      );
      await deliveries.insert(pingDoc);
      delivered();
      return { webhook: webhookMessage(doc), token };
    },

    async listWebhooks(req: ListWebhooksRequest) {
      if (!isUuid(req.organizationId)) return { webhooks: [] };
      return { webhooks: (await webhooks.list(req.organizationId.toLowerCase())).map(webhookMessage) };
    },

    async getWebhook(req: GetWebhookRequest) {
      return { webhook: webhookMessage(await find(req.organizationId, req.id)) };
    },

    async updateWebhook(req: UpdateWebhookRequest) {
      const hook = await find(req.organizationId, req.id);
      const all = fieldsOf(req.webhook);
      const changes: WebhookChanges = {};
      for (const name of req.updateMask) {
        const key = MASK[name];
        if (!key) throw invalidFields([{ field: name, code: "cannot be changed" }]);
        (changes as Record<string, unknown>)[key] = all[key];
      }
      const problems = webhookProblems(changes);
      if (problems.length > 0) throw invalidFields(problems);
      const updated = await webhooks.update(hook.organizationId, hook._id, changes);
      if (!updated) throw notFound("webhook");
      return { webhook: webhookMessage(updated) };
    },

    async deleteWebhook(req: DeleteWebhookRequest) {
      const hook = await find(req.organizationId, req.id);
      if (!(await webhooks.remove(hook.organizationId, hook._id))) throw notFound("webhook");
      await deliveries.removeForWebhook(hook._id);
      return {};
    },

    async listWebhookDeliveries(req: ListWebhookDeliveriesRequest) {
      const hook = await find(req.organizationId, req.webhookId);
      return { deliveries: (await deliveries.listForWebhook(hook._id, DELIVERIES_SHOWN)).map(deliveryMessage) };
    },
  };
}
