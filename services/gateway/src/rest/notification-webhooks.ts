import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { isOrganizationAdmin } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import {
  CreatedNotificationWebhookSchema,
  NotificationWebhookSchema,
  renderNotificationWebhook,
  renderWebhookDelivery,
  WebhookDeliverySchema,
} from "../render/notification-webhook.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { Id, OrgParams, Slug, text } from "../route-declarations/params.js";
import { refuseUnknownFields } from "../route-declarations/unknown-fields.js";
import { PagingQuery, pageOfWhole } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const WebhookParams = Type.Object({ org: Slug, id: Id });
const tags = ["notification webhooks"];

/** The fields of a webhook; the notifications service judges the values and names a wrong one in a 422. */
const fields = {
  webhook_url: text(2048, { description: "where the notifications are posted (http or https)" }),
  events: Type.Array(text(64), {
    maxItems: 32,
    description: "Buildkite's event names: build.scheduled, build.running, …, agent.stopped, ping",
  }),
  pipeline_ids: Type.Array(text(64), { maxItems: 100, description: "only these pipelines' builds; empty: all" }),
  token_mode: text(16, {
    description: '"token" (X-Buildkite-Token, the default) or "signature" (X-Buildkite-Signature)',
  }),
  description: text(500),
};
const CreateBodySchema = Type.Object(
  {
    webhook_url: fields.webhook_url,
    events: fields.events,
    pipeline_ids: Type.Optional(fields.pipeline_ids),
    token_mode: Type.Optional(fields.token_mode),
    description: Type.Optional(fields.description),
  },
  { additionalProperties: false },
);
const UpdateBodySchema = Type.Object(
  {
    webhook_url: Type.Optional(fields.webhook_url),
    events: Type.Optional(fields.events),
    pipeline_ids: Type.Optional(fields.pipeline_ids),
    token_mode: Type.Optional(fields.token_mode),
    description: Type.Optional(fields.description),
  },
  { additionalProperties: false },
);

const KNOWN_FIELDS = Object.keys(fields);

/**
 * An organization's notification webhooks (docs/notifications.md#organization-webhooks; this project's extension:
 * Buildkite manages them on a settings page). Administrators of the organization only; the token is answered by the
 * create alone.
 */
export function notificationWebhookRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  /** The organization's id, when the caller administers it (a member gets 403, anyone else 404). */
  const adminOf = (request: FastifyRequest, org: string) => {
    const access = organizationAccess(request, org);
    if (!isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
    return access.organization?.id ?? "";
  };
  const route = typed(app);
  const read = { scope: "read_notification_services" } as const;
  const write = { scope: "write_notification_services" } as const;

  route.get(
    "/v2/organizations/:org/webhooks",
    {
      config: read,
      schema: {
        operationId: "listNotificationWebhooks",
        summary: "List the organization's notification webhooks, oldest first (administrators)",
        tags,
        params: OrgParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(NotificationWebhookSchema)),
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      const res = await clients.notifications.listWebhooks({ organizationId });
      const page = pageOfWhole(res.webhooks, request.query, request, reply, deps.publicUrl);
      return page.map((w) => renderNotificationWebhook(w, urls, request.params.org));
    },
  );

  route.post(
    "/v2/organizations/:org/webhooks",
    {
      config: write,
      preValidation: async (request) => refuseUnknownFields(request.body, KNOWN_FIELDS),
      schema: {
        operationId: "createNotificationWebhook",
        summary: "Create a notification webhook; its token is in this answer only, and a ping is sent (administrators)",
        tags,
        params: OrgParams,
        body: CreateBodySchema,
        response: responses(201, CreatedNotificationWebhookSchema),
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      const b = request.body;
      const res = await clients.notifications.createWebhook({
        organizationId,
        webhook: {
          url: b.webhook_url,
          events: b.events,
          pipelineIds: b.pipeline_ids ?? [],
          tokenMode: b.token_mode ?? "",
          description: b.description ?? "",
        },
        createdBy: request.principal?.user?.id ?? "",
      });
      if (!res.webhook) throw new HttpError(404, "No webhook found");
      return reply
        .status(201)
        .send({ ...renderNotificationWebhook(res.webhook, urls, request.params.org), token: res.token });
    },
  );

  route.get(
    "/v2/organizations/:org/webhooks/:id",
    {
      config: read,
      schema: {
        operationId: "getNotificationWebhook",
        summary: "Get a notification webhook (administrators)",
        tags,
        params: WebhookParams,
        response: responses(200, NotificationWebhookSchema),
      },
    },
    async (request) => {
      const organizationId = adminOf(request, request.params.org);
      const res = await clients.notifications.getWebhook({ organizationId, id: request.params.id });
      if (!res.webhook) throw new HttpError(404, "No webhook found");
      return renderNotificationWebhook(res.webhook, urls, request.params.org);
    },
  );

  route.patch(
    "/v2/organizations/:org/webhooks/:id",
    {
      config: write,
      preValidation: async (request) => refuseUnknownFields(request.body, KNOWN_FIELDS),
      schema: {
        operationId: "updateNotificationWebhook",
        summary: "Change a notification webhook's fields given (administrators)",
        tags,
        params: WebhookParams,
        body: UpdateBodySchema,
        response: responses(200, NotificationWebhookSchema),
      },
    },
    async (request) => {
      const organizationId = adminOf(request, request.params.org);
      const b = request.body;
      const res = await clients.notifications.updateWebhook({
        organizationId,
        id: request.params.id,
        webhook: {
          url: b.webhook_url ?? "",
          events: b.events ?? [],
          pipelineIds: b.pipeline_ids ?? [],
          tokenMode: b.token_mode ?? "",
          description: b.description ?? "",
        },
        updateMask: Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined),
      });
      if (!res.webhook) throw new HttpError(404, "No webhook found");
      return renderNotificationWebhook(res.webhook, urls, request.params.org);
    },
  );

  route.delete(
    "/v2/organizations/:org/webhooks/:id",
    {
      config: write,
      schema: {
        operationId: "deleteNotificationWebhook",
        summary: "Remove a notification webhook and its deliveries (administrators)",
        tags,
        params: WebhookParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      await clients.notifications.deleteWebhook({ organizationId, id: request.params.id });
      return reply.status(204).send();
    },
  );

  route.get(
    "/v2/organizations/:org/webhooks/:id/deliveries",
    {
      config: read,
      schema: {
        operationId: "listNotificationWebhookDeliveries",
        summary: "A notification webhook's last 20 deliveries, newest first, with status and timing (administrators)",
        tags,
        params: WebhookParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(WebhookDeliverySchema)),
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      const res = await clients.notifications.listWebhookDeliveries({ organizationId, webhookId: request.params.id });
      return pageOfWhole(res.deliveries, request.query, request, reply, deps.publicUrl).map(renderWebhookDelivery);
    },
  );
}
