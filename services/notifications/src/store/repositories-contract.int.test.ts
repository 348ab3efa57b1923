import { MongoClient } from "mongodb";
import {
  createMongoDeliveryRepository,
  type DeliveryDoc,
  type DeliveryRepository,
  LEASE_FREE,
} from "./delivery-repository.js";
import { createMemoryDeliveryRepository } from "./memory-delivery-repository.js";
import { createMemoryWebhookRepository } from "./memory-webhook-repository.js";
import { createMongoWebhookRepository, type WebhookDoc, type WebhookRepository } from "./webhook-repository.js";

// The notifications service's repositories, one set of cases run against the MongoDB implementations over the real
// MongoDB-wire server (FerretDB in the tests) and against the in-memory ones the unit tests use: a claim is won by
// one of several concurrent claimers, an attempt is recorded only under its claim, order and the webhook bound hold.
let mongo: MongoClient;
const dbName = `it_notifications_contract_${Date.now()}`;
let databases = 0;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  for (let i = 1; i <= databases; i++) await mongo.db(`${dbName}_${i}`).dropDatabase();
  await mongo.close();
});

const t0 = new Date("2026-03-01T10:00:00.000Z");
const later = (ms: number) => new Date(t0.getTime() + ms);

const delivery = (id: string, over: Partial<DeliveryDoc> = {}): DeliveryDoc => ({
  _id: id,
  organizationId: "o-1",
  kind: "webhook",
  event: "build.finished",
  webhookId: "w-1",
  host: "hooks.example",
  orderKey: "",
  seq: 1,
  request: { url: "https://hooks.example/x", body: "{}" },
  status: "pending",
  attempts: 0,
  attemptLog: [],
  createdAt: t0,
  nextAttemptAt: t0,
  giveUpAt: later(3_600_000),
  leaseUntil: LEASE_FREE,
  leaseOwner: "",
  lastAttemptAt: null,
  responseCode: 0,
  error: "",
  durationMs: 0,
  finishedAt: null,
  ...over,
});

const deliveryImplementations: Array<[string, () => Promise<DeliveryRepository>]> = [
  ["on MongoDB", () => createMongoDeliveryRepository(mongo.db(`${dbName}_${++databases}`))],
  ["in memory", async () => createMemoryDeliveryRepository()],
];

describe.each(deliveryImplementations)("the DeliveryRepository %s", (_name, make) => {
  it("stores a delivery once, and gives a due one to one of several concurrent claimers", async () => {
    const repo = await make();
    expect(await repo.insert(delivery("d-1"))).toBe(true);
    expect(await repo.insert(delivery("d-1", { event: "other" }))).toBe(false);
    expect((await repo.due(t0, 10)).map((d) => d._id)).toEqual(["d-1"]);
    const claims = await Promise.all(["a", "b", "c", "d"].map((owner) => repo.claim("d-1", owner, t0, later(30_000))));
    const won = claims.filter((c) => c !== null);
    expect(won).toHaveLength(1);
    expect(await repo.due(t0, 10)).toEqual([]);
    // A lapsed claim can be taken again.
    expect(await repo.claim("d-1", "e", later(30_001), later(60_000))).toMatchObject({ leaseOwner: "e" });
  });

  it("records an attempt only under its claim, and lets go of it", async () => {
    const repo = await make();
    await repo.insert(delivery("d-2"));
    await repo.claim("d-2", "me", t0, later(30_000));
    const attempt = { at: t0, responseCode: 503, error: "answered 503", durationMs: 12 };
    expect(await repo.record("d-2", "someone-else", attempt, { status: "failed", at: t0 })).toBe(false);
    expect(await repo.record("d-2", "me", attempt, { status: "pending", at: t0, nextAttemptAt: later(2_000) })).toBe(
      true,
    );
    const [d] = await repo.listForWebhook("w-1", 20);
    expect(d).toMatchObject({
      status: "pending",
      attempts: 1,
      responseCode: 503,
      error: "answered 503",
      durationMs: 12,
      nextAttemptAt: later(2_000),
      leaseOwner: "",
      leaseUntil: LEASE_FREE,
      attemptLog: [attempt],
    });
    expect(await repo.due(later(1_999), 10)).toEqual([]);
    expect((await repo.due(later(2_000), 10)).map((x) => x._id)).toEqual(["d-2"]);
    await repo.claim("d-2", "me", later(2_000), later(32_000));
    const ok = { at: later(2_000), responseCode: 200, error: "", durationMs: 5 };
    expect(await repo.record("d-2", "me", ok, { status: "succeeded", at: later(2_005) })).toBe(true);
    expect((await repo.listForWebhook("w-1", 20))[0]).toMatchObject({
      status: "succeeded",
      attempts: 2,
      finishedAt: later(2_005),
    });
    // Finished: neither due nor recorded again.
    expect(await repo.record("d-2", "me", ok, { status: "succeeded", at: later(3_000) })).toBe(false);
  });

  it("knows an earlier pending delivery of the same order key, lists a webhook's newest first, removes", async () => {
    const repo = await make();
    await repo.insert(delivery("first", { orderKey: "k", seq: 1 }));
    await repo.insert(delivery("second", { orderKey: "k", seq: 2, createdAt: later(1) }));
    await repo.insert(delivery("other", { orderKey: "j", seq: 0, webhookId: "w-2" }));
    expect(await repo.pendingCount("o-1", 10)).toBe(3);
    expect(await repo.pendingCount("o-1", 2)).toBe(2);
    expect(await repo.pendingCount("o-2", 10)).toBe(0);
    expect(await repo.hasEarlierPending("k", 2)).toBe(true);
    expect(await repo.hasEarlierPending("k", 1)).toBe(false);
    expect(await repo.hasEarlierPending("j", 5)).toBe(true);
    expect(await repo.hasEarlierPending("j", 0)).toBe(false);
    expect((await repo.listForWebhook("w-1", 20)).map((d) => d._id)).toEqual(["second", "first"]);
    expect((await repo.listForWebhook("w-1", 1)).map((d) => d._id)).toEqual(["second"]);
    await repo.removeForWebhook("w-1");
    expect(await repo.listForWebhook("w-1", 20)).toEqual([]);
    expect(await repo.listForWebhook("w-2", 20)).toHaveLength(1);
    await repo.claim("other", "me", t0, later(1_000));
    await repo.record(
      "other",
      "me",
      { at: t0, responseCode: 200, error: "", durationMs: 1 },
      { status: "succeeded", at: t0 },
    );
    expect(await repo.removeFinishedBefore(t0, 10)).toBe(0);
    expect(await repo.removeFinishedBefore(later(1), 10)).toBe(1);
    expect(await repo.listForWebhook("w-2", 20)).toEqual([]);
  });
});

const webhookImplementations: Array<[string, () => Promise<WebhookRepository>]> = [
  ["on MongoDB", () => createMongoWebhookRepository(mongo.db(`${dbName}_${++databases}`))],
  ["in memory", async () => createMemoryWebhookRepository()],
];

const webhook = (id: string, organizationId = "o-1", createdAt = t0): WebhookDoc => ({
  _id: id,
  organizationId,
  url: "https://hooks.example/x",
  events: ["ping"],
  pipelineIds: [],
  tokenMode: "token",
  token: "t",
  description: "",
  createdAt,
  createdBy: "",
});

describe.each(webhookImplementations)("the WebhookRepository %s", (_name, make) => {
  it("holds an organization to its bound, even for concurrent creates, and frees a place on removal", async () => {
    const repo = await make();
    const made = await Promise.all(
      ["w-1", "w-2", "w-3", "w-4"].map((id, i) => repo.insert(webhook(id, "o-1", later(i)), 2)),
    );
    expect(made.filter(Boolean)).toHaveLength(2);
    expect(await repo.insert(webhook("w-5", "o-2"), 2)).toBe(true);
    const kept = (await repo.list("o-1")).map((w) => w._id);
    expect(kept).toHaveLength(2);
    expect(await repo.remove("o-2", kept[0] as string)).toBe(false);
    expect(await repo.remove("o-1", kept[0] as string)).toBe(true);
    expect(await repo.insert(webhook("w-6", "o-1", later(10)), 2)).toBe(true);
    expect(await repo.insert(webhook("w-7", "o-1", later(11)), 2)).toBe(false);
  });

  it("gets, updates and lists only within the organization", async () => {
    const repo = await make();
    await repo.insert(webhook("w-1"), 10);
    expect(await repo.get("o-2", "w-1")).toBeNull();
    expect(await repo.update("o-2", "w-1", { description: "x" })).toBeNull();
    expect(await repo.update("o-1", "w-1", { description: "x", events: ["build.finished"] })).toMatchObject({
      description: "x",
      events: ["build.finished"],
    });
    expect(await repo.list("o-2")).toEqual([]);
  });
});
