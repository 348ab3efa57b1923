import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Role } from "@conveyor/proto/identity";
import {
  type CreateWebhookRequest,
  DeliverySchema,
  type UpdateWebhookRequest,
  WebhookSchema,
} from "@conveyor/proto/notifications";
import { invalidFields } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// The notification webhook routes in the gateway alone (docs/notifications.md#organization-webhooks): the fields,
// the token only in the create's answer, the update mask from the keys given, field errors as 422, administrators
// and the notification services scopes only.
const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const webhook = create(WebhookSchema, {
  id: "55555555-0000-4000-8000-000000000001",
  organizationId: acme.id,
  url: "https://hooks.example/ci",
  events: ["build.finished"],
  pipelineIds: [],
  tokenMode: "signature",
  description: "",
  createdAt: timestampFromDate(new Date("2026-03-01T10:00:00.000Z")),
});
const delivery = create(DeliverySchema, {
  id: "66666666-0000-4000-8000-000000000001",
  event: "ping",
  status: "succeeded",
  attempts: 1,
  responseCode: 204,
  durationMs: 12,
  createdAt: timestampFromDate(new Date("2026-03-01T10:00:00.000Z")),
  lastAttemptAt: timestampFromDate(new Date("2026-03-01T10:00:00.100Z")),
  finishedAt: timestampFromDate(new Date("2026-03-01T10:00:00.112Z")),
});

let app: FastifyInstance;
let created: CreateWebhookRequest | undefined;
let updated: UpdateWebhookRequest | undefined;

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        [
          "admin",
          makePrincipal(ann, ["read_notification_services", "write_notification_services"], [[acme, Role.ADMIN]]),
        ],
        ["reader", makePrincipal(ann, ["read_notification_services"], [[acme, Role.ADMIN]])],
        [
          "member",
          makePrincipal(ann, ["read_notification_services", "write_notification_services"], [[acme, Role.MEMBER]]),
        ],
      ]),
      revoked: [],
    },
    {
      notifications: {
        listWebhooks: () => ({ webhooks: [webhook] }),
        getWebhook: () => ({ webhook }),
        createWebhook(req) {
          created = req;
          if (req.webhook?.events.includes("nope")) throw invalidFields([{ field: "events", code: "is unknown" }]);
          return { webhook, token: "s3cret" };
        },
        updateWebhook(req) {
          updated = req;
          return { webhook };
        },
        deleteWebhook: () => ({}),
        listWebhookDeliveries: () => ({ deliveries: [delivery] }),
      },
    },
  ));
});
afterAll(() => app.close());

const base = "/v2/organizations/acme/webhooks";
const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, token: string, payload?: unknown) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });

describe("the notification webhook routes", () => {
  it("list and get webhooks without their token", async () => {
    const res = await call("GET", `${base}/${webhook.id}`, "reader");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: webhook.id,
      url: `http://api.test/v2/organizations/acme/webhooks/${webhook.id}`,
      deliveries_url: `http://api.test/v2/organizations/acme/webhooks/${webhook.id}/deliveries`,
      webhook_url: "https://hooks.example/ci",
      events: ["build.finished"],
      pipeline_ids: [],
      token_mode: "signature",
      description: null,
      created_at: "2026-03-01T10:00:00.000Z",
    });
    const list = await call("GET", base, "reader");
    expect(list.json()).toHaveLength(1);
    expect(list.body).not.toContain('token"');
  });

  it("create answers the token once, with the creator, and takes defaults", async () => {
    const res = await call("POST", base, "admin", { webhook_url: "https://hooks.example/ci", events: ["ping"] });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ id: webhook.id, token: "s3cret" });
    expect(created?.webhook).toMatchObject({ url: "https://hooks.example/ci", events: ["ping"], tokenMode: "" });
    expect(created?.createdBy).toBe(ann.id);
  });

  it("refuses unknown fields and names the service's field errors in a 422", async () => {
    const extra = await call("POST", base, "admin", { webhook_url: "https://x", events: ["ping"], secret: "x" });
    expect(extra.statusCode).toBe(422);
    expect(extra.json()).toMatchObject({ errors: [{ field: "secret", code: "is not taken" }] });
    const extraPatch = await call("PATCH", `${base}/${webhook.id}`, "admin", { url: "https://x" });
    expect(extraPatch.json()).toMatchObject({ errors: [{ field: "url", code: "is not taken" }] });
    const bad = await call("POST", base, "admin", { webhook_url: "https://x", events: ["nope"] });
    expect(bad.statusCode).toBe(422);
    expect(bad.json()).toMatchObject({ errors: [{ field: "events", code: "is unknown" }] });
  });

  it("update sends the keys given as the mask", async () => {
    const res = await call("PATCH", `${base}/${webhook.id}`, "admin", { events: ["build.failing"], description: "" });
    expect(res.statusCode).toBe(200);
    expect(updated?.updateMask.sort()).toEqual(["description", "events"]);
    expect(updated?.webhook?.events).toEqual(["build.failing"]);
  });

  it("delete answers 204 and deliveries show status and timing", async () => {
    const gone = await call("DELETE", `${base}/${webhook.id}`, "admin");
    expect([gone.statusCode, gone.body]).toEqual([204, ""]);
    const res = await call("GET", `${base}/${webhook.id}/deliveries`, "reader");
    expect(res.json()).toEqual([
      {
        id: delivery.id,
        event: "ping",
        status: "succeeded",
        attempts: 1,
        response_code: 204,
        error: null,
        duration_ms: 12,
        created_at: "2026-03-01T10:00:00.000Z",
        last_attempt_at: "2026-03-01T10:00:00.100Z",
        next_attempt_at: null,
        finished_at: "2026-03-01T10:00:00.112Z",
      },
    ]);
  });

  it("need write_notification_services to change, and an administrator", async () => {
    expect((await call("POST", base, "reader", { webhook_url: "https://x", events: ["ping"] })).statusCode).toBe(403);
    expect((await call("GET", base, "member")).statusCode).toBe(403);
  });
});
