import { create, toBinary } from "@bufbuild/protobuf";
import { BuildChangedSchema, BuildSchema } from "@conveyor/proto/builds";
import type { OutboundClient } from "@conveyor/runtime";
import type { AttemptOutcome } from "../domain/retry-policy.js";
import { createEventRecorder } from "../events/event-recorder.js";
import type { DeliveryDoc } from "../store/delivery-repository.js";
import { createMemoryDeliveryRepository } from "../store/memory-delivery-repository.js";
import { createMemoryWebhookRepository } from "../store/memory-webhook-repository.js";
import type { WebhookDoc } from "../store/webhook-repository.js";
import { createOrganizationWebhooksHandler } from "../webhooks/organization-webhooks-handler.js";
import { createWebhookChannel } from "../webhooks/webhook-channel.js";
import type { Channel } from "./channel.js";
import { createDispatcher, type DispatcherConfig } from "./dispatcher.js";

const ORG = "11111111-1111-4111-8111-111111111111";
const PIPELINE = "22222222-2222-4222-8222-222222222222";
const config: DispatcherConfig = {
  retry: { baseMs: 1_000, maxMs: 10_000, maxAttempts: 4 },
  leaseMs: 30_000,
  maxInFlight: 10,
  perOrganization: 2,
  perHost: 1,
  batch: 100,
};

function world() {
  const clock = { now: new Date("2026-01-01T00:00:00Z") };
  const now = () => new Date(clock.now);
  const deliveries = createMemoryDeliveryRepository();
  const webhooks = createMemoryWebhookRepository();
  const logger = { warn: () => {}, info: () => {}, debug: () => {} };
  const hook = (over: Partial<WebhookDoc> = {}): WebhookDoc => ({
    _id: crypto.randomUUID(),
    organizationId: ORG,
    url: "https://hooks.example/x",
    events: ["build.scheduled", "build.finished"],
    pipelineIds: [],
    tokenMode: "token",
    token: "t0k3n",
    description: "",
    createdAt: now(),
    createdBy: "",
    ...over,
  });
  const payloads = { body: async (_e: unknown, name: string) => ({ event: name, build: { id: "b" } }) };
  const record = createEventRecorder({
    handlers: [createOrganizationWebhooksHandler(webhooks, payloads)],
    deliveries,
    now,
    retryForMs: 60_000,
    maxPendingPerOrganization: 3,
  });
  const event = (state: string, number = 1, buildId = "b1") =>
    toBinary(
      BuildChangedSchema,
      create(BuildChangedSchema, {
        build: create(BuildSchema, { id: buildId, organizationId: ORG, pipelineId: PIPELINE, number, state }),
        previousState: "",
      }),
    );
  return { clock, now, deliveries, webhooks, logger, hook, record, event };
}

/** A channel answering from a script of outcomes, recording what it was given. */
function scripted(outcomes: AttemptOutcome[], kind = "webhook") {
  const sent: DeliveryDoc[] = [];
  const channel: Channel = {
    kind,
    async send(d) {
      sent.push(d);
      return outcomes.shift() ?? { ok: true, responseCode: 200, error: "", retryable: false };
    },
  };
  return { channel, sent };
}

describe("the event recorder", () => {
  it("stores one delivery per webhook wanting the event, once however often the event is redelivered", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    await w.webhooks.insert(w.hook({ events: ["build.running"] }), 50);
    await w.webhooks.insert(w.hook({ pipelineIds: ["33333333-3333-4333-8333-333333333333"] }), 50);
    const data = w.event("scheduled");
    expect(await w.record(data, "ci.builds.build_created", 7)).toBe(1);
    expect(await w.record(data, "ci.builds.build_created", 7)).toBe(0);
    const [d] = [...w.deliveries.docs.values()];
    expect(d).toMatchObject({
      kind: "webhook",
      event: "build.scheduled",
      seq: 7,
      status: "pending",
      organizationId: ORG,
    });
    expect(JSON.parse((d as DeliveryDoc).request.body as string)).toEqual({
      event: "build.scheduled",
      build: { id: "b" },
    });
  });

  it("stores deliveries past the organization's pending bound as failed, saying so", async () => {
    const w = world();
    for (let i = 0; i < 4; i++) await w.webhooks.insert(w.hook(), 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    await w.record(w.event("scheduled", 2, "b2"), "ci.builds.build_created", 2);
    const docs = [...w.deliveries.docs.values()];
    expect(docs.filter((d) => d.status === "pending")).toHaveLength(4);
    expect(docs.filter((d) => d.status === "failed").map((d) => d.error)).toEqual(
      Array(4).fill("not sent: the organization has 3 deliveries pending (NOTIFY_MAX_PENDING)"),
    );
  });

  it("stores nothing for events no webhook hears", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    expect(await w.record(w.event("running"), "ci.builds.build_state_changed", 1)).toBe(0);
    expect(await w.record(new Uint8Array(), "ci.builds.pipeline_counts_changed", 2)).toBe(0);
  });
});

describe("the dispatcher", () => {
  it("sends a due delivery once, and records the attempt", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    const { channel, sent } = scripted([]);
    const d = createDispatcher({ deliveries: w.deliveries, channels: [channel], config, now: w.now, logger: w.logger });
    expect(await d.dispatchDue()).toBe(1);
    await d.idle();
    expect(await d.dispatchDue()).toBe(0);
    expect(sent).toHaveLength(1);
    const [doc] = [...w.deliveries.docs.values()];
    expect(doc).toMatchObject({ status: "succeeded", attempts: 1, responseCode: 200 });
    expect(doc?.attemptLog).toHaveLength(1);
  });

  it("tries a failed delivery again after the backoff, and gives up after the last attempt", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    const fail = { ok: false, responseCode: 503, error: "answered 503", retryable: true };
    const { channel, sent } = scripted([fail, fail, fail, fail]);
    const d = createDispatcher({
      deliveries: w.deliveries,
      channels: [channel],
      config,
      now: w.now,
      logger: w.logger,
      random: () => 0,
    });
    for (const wait of [0, 1_000, 2_000, 4_000]) {
      w.clock.now = new Date(w.clock.now.getTime() + wait);
      await d.dispatchDue();
      await d.idle();
      // Not before its time.
      expect(await d.dispatchDue()).toBe(0);
    }
    expect(sent).toHaveLength(4);
    expect([...w.deliveries.docs.values()][0]).toMatchObject({ status: "failed", attempts: 4, responseCode: 503 });
  });

  it("never lets two dispatchers (replicas) send the same delivery at once", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    const a = scripted([]);
    const b = scripted([]);
    const da = createDispatcher({
      deliveries: w.deliveries,
      channels: [a.channel],
      config,
      now: w.now,
      logger: w.logger,
    });
    const db = createDispatcher({
      deliveries: w.deliveries,
      channels: [b.channel],
      config,
      now: w.now,
      logger: w.logger,
    });
    await Promise.all([da.dispatchDue(), db.dispatchDue()]);
    await Promise.all([da.idle(), db.idle()]);
    expect(a.sent.length + b.sent.length).toBe(1);
  });

  it("sends again after a claim lapsed (its process died), with the same delivery id", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    const [doc] = [...w.deliveries.docs.values()];
    // Another process claimed it and died.
    await w.deliveries.claim(doc?._id ?? "", "dead", w.now(), new Date(w.now().getTime() + config.leaseMs));
    const { channel, sent } = scripted([]);
    const d = createDispatcher({ deliveries: w.deliveries, channels: [channel], config, now: w.now, logger: w.logger });
    expect(await d.dispatchDue()).toBe(0);
    w.clock.now = new Date(w.clock.now.getTime() + config.leaseMs + 1);
    expect(await d.dispatchDue()).toBe(1);
    await d.idle();
    expect(sent.map((s) => s._id)).toEqual([doc?._id]);
  });

  it("holds to the per-host bound and sends ordered deliveries one at a time in order", async () => {
    const w = world();
    const now = w.now();
    const base = {
      organizationId: ORG,
      kind: "ordered",
      event: "e",
      webhookId: "",
      host: "h",
      request: {},
      status: "pending" as const,
      attempts: 0,
      attemptLog: [],
      createdAt: now,
      nextAttemptAt: now,
      giveUpAt: new Date(now.getTime() + 60_000),
      leaseUntil: new Date(0),
      leaseOwner: "",
      lastAttemptAt: null,
      responseCode: 0,
      error: "",
      durationMs: 0,
      finishedAt: null,
    };
    await w.deliveries.insert({ ...base, _id: "second", orderKey: "k", seq: 2 });
    await w.deliveries.insert({ ...base, _id: "first", orderKey: "k", seq: 1 });
    await w.deliveries.insert({ ...base, _id: "other-host", orderKey: "", seq: 3, host: "h2" });
    const { channel, sent } = scripted([], "ordered");
    const d = createDispatcher({ deliveries: w.deliveries, channels: [channel], config, now: w.now, logger: w.logger });
    expect(await d.dispatchDue()).toBe(2);
    await d.idle();
    expect(await d.dispatchDue()).toBe(1);
    await d.idle();
    expect(sent.map((s) => s._id)).toEqual(["first", "other-host", "second"]);
  });

  it("fails at once a delivery no channel sends", async () => {
    const w = world();
    await w.webhooks.insert(w.hook(), 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    const d = createDispatcher({ deliveries: w.deliveries, channels: [], config, now: w.now, logger: w.logger });
    await d.dispatchDue();
    await d.idle();
    expect([...w.deliveries.docs.values()][0]).toMatchObject({
      status: "failed",
      error: 'no channel sends "webhook" deliveries',
    });
  });
});

describe("the webhook channel", () => {
  it("posts the recorded body with the event, the delivery id and the token or a signature", async () => {
    const w = world();
    const calls: Array<{ url: string; headers: Record<string, string>; body: string }> = [];
    const http: Pick<OutboundClient, "request"> = {
      async request(url, init) {
        calls.push({ url, headers: init?.headers ?? {}, body: init?.body ?? "" });
        return { status: calls.length === 1 ? 204 : 500, headers: {}, body: "", truncated: false, url };
      },
    };
    const token = w.hook();
    const signed = w.hook({ tokenMode: "signature" });
    await w.webhooks.insert(token, 50);
    await w.webhooks.insert(signed, 50);
    await w.record(w.event("scheduled"), "ci.builds.build_created", 1);
    const channel = createWebhookChannel(w.webhooks, http, w.now);
    const docs = [...w.deliveries.docs.values()].sort((a) => (a.webhookId === token._id ? -1 : 1));
    const signal = new AbortController().signal;
    expect(await channel.send(docs[0] as DeliveryDoc, signal)).toMatchObject({ ok: true, responseCode: 204 });
    expect(await channel.send(docs[1] as DeliveryDoc, signal)).toMatchObject({ ok: false, retryable: true });
    expect(calls[0]?.headers).toMatchObject({ "x-buildkite-event": "build.scheduled", "x-buildkite-token": "t0k3n" });
    expect(calls[0]?.headers["x-buildkite-delivery"]).toBe(docs[0]?._id);
    expect(calls[1]?.headers["x-buildkite-signature"]).toMatch(/^timestamp=1767225600,signature=[0-9a-f]{64}$/);
    expect(calls[1]?.headers["x-buildkite-token"]).toBeUndefined();
    await w.webhooks.remove(ORG, token._id);
    expect(await channel.send(docs[0] as DeliveryDoc, signal)).toMatchObject({ ok: false, retryable: false });
  });
});
