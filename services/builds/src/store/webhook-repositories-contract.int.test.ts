import { randomUUID } from "node:crypto";
import type { PullRequestState } from "@conveyor/ci-rules";
import { MongoClient } from "mongodb";
import { createMemoryWebhookDeliveryRepository } from "./memory-webhook-delivery-repository.js";
import { createMemoryWebhookPullRequestRepository } from "./memory-webhook-pull-request-repository.js";
import {
  createMongoWebhookDeliveryRepository,
  type WebhookDelivery,
  type WebhookDeliveryRepository,
} from "./webhook-delivery-repository.js";
import {
  createMongoWebhookPullRequestRepository,
  type WebhookPullRequestRepository,
} from "./webhook-pull-request-repository.js";

// The webhook inbox's repositories, MongoDB's against the stack's server and the in-memory fakes the unit tests use,
// held to the same contract.
const dbName = `it_webhooks_${Date.now()}`;
let mongo: MongoClient;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

const T = (s: number) => new Date(Date.UTC(2026, 5, 1, 10, 0, s));

const delivery = (pipelineId: string, id = `${pipelineId}:github:${randomUUID()}`): WebhookDelivery => ({
  id,
  pipelineId,
  organizationId: "o",
  organizationSlug: "acme",
  forge: "github",
  event: "push",
  receivedAt: T(0),
  plan: {
    builds: [],
    cancels: [{ branch: "x", reason: 'Branch "x" was deleted.' }],
    pullRequests: [],
    reasons: ["dots.and $dollars in text are fine"],
  },
  leaseUntil: T(30),
  attempts: 1,
  doneAt: null,
  outcome: null,
});

const state = (number: string, headBranch: string, open: boolean, fork = false): PullRequestState => ({
  headBranch,
  fork,
  open,
  pullRequest: { number, baseBranch: "main", repository: "https://x/app.git", labels: ["a.b"], draft: null },
});

describe.each([
  ["MongoDB", async () => createMongoWebhookDeliveryRepository(mongo.db(dbName))],
  ["in memory", async () => createMemoryWebhookDeliveryRepository()],
])("%s webhook deliveries", (_name, make: () => Promise<WebhookDeliveryRepository>) => {
  it("records a delivery once, and reads it back as it was recorded", async () => {
    const repo = await make();
    const d = delivery(randomUUID());
    expect(await repo.insert(d)).toBe(true);
    expect(await repo.insert({ ...d, event: "other" })).toBe(false);
    expect(await repo.find(d.id)).toEqual(d);
    expect(await repo.find("nothing")).toBeNull();
  });

  it("lets one taker have a delivery whose lease lapsed, and none once it is done", async () => {
    const repo = await make();
    const d = delivery(randomUUID());
    await repo.insert(d);
    // Other tests' deliveries may be there too: take until this one comes, or nothing lapsed is left.
    const takeThis = async (now: Date, until: Date) => {
      for (;;) {
        const taken = await repo.takeLapsed(now, until);
        if (!taken || taken.id === d.id) return taken;
      }
    };
    expect(await takeThis(T(29), T(100))).toBeNull();
    const taken = await takeThis(T(31), T(61));
    expect(taken).toMatchObject({ id: d.id, leaseUntil: T(61), attempts: 2 });
    expect(await takeThis(T(40), T(100))).toBeNull();
    await repo.finish(d.id, { builds: [{ id: "b", number: 3 }], canceled: 1, reasons: [] }, T(50));
    expect(await takeThis(T(999), T(1000))).toBeNull();
    expect(await repo.find(d.id)).toMatchObject({
      doneAt: T(50),
      outcome: { builds: [{ id: "b", number: 3 }], canceled: 1, reasons: [] },
    });
  });

  it("forgets deliveries done before a time, and a pipeline's deliveries", async () => {
    const repo = await make();
    const pipelineId = randomUUID();
    const [old, recent, pending, other] = [
      delivery(pipelineId),
      delivery(pipelineId),
      delivery(pipelineId),
      delivery(randomUUID()),
    ];
    for (const d of [old, recent, pending, other]) await repo.insert(d);
    await repo.finish(old.id, { builds: [], canceled: 0, reasons: [] }, T(10));
    await repo.finish(recent.id, { builds: [], canceled: 0, reasons: [] }, T(20));
    expect(await repo.removeDoneBefore(T(15), 100)).toBeGreaterThanOrEqual(1);
    expect(await repo.find(old.id)).toBeNull();
    expect(await repo.find(recent.id)).not.toBeNull();
    expect(await repo.find(pending.id)).not.toBeNull();
    await repo.removeOfPipeline(pipelineId);
    expect(await repo.find(recent.id)).toBeNull();
    expect(await repo.find(pending.id)).toBeNull();
    expect(await repo.find(other.id)).not.toBeNull();
  });
});

describe.each([
  ["MongoDB", async () => createMongoWebhookPullRequestRepository(mongo.db(dbName))],
  ["in memory", async () => createMemoryWebhookPullRequestRepository()],
])("%s webhook pull requests", (_name, make: () => Promise<WebhookPullRequestRepository>) => {
  it("finds the open pull request of a branch of the pipeline's repository, not a fork's or a closed one", async () => {
    const repo = await make();
    const pipelineId = randomUUID();
    await repo.record(pipelineId, "1", state("1", "feature", true), T(1));
    await repo.record(pipelineId, "2", state("2", "forked", true, true), T(1));
    await repo.record(pipelineId, "3", state("3", "done", false), T(1));
    expect(await repo.openFrom(pipelineId, "feature")).toEqual(state("1", "feature", true).pullRequest);
    expect(await repo.openFrom(pipelineId, "forked")).toBeNull();
    expect(await repo.openFrom(pipelineId, "done")).toBeNull();
    expect(await repo.openFrom(randomUUID(), "feature")).toBeNull();
  });

  it("keeps the newest state whatever order the deliveries came in", async () => {
    const repo = await make();
    const pipelineId = randomUUID();
    await repo.record(pipelineId, "1", state("1", "feature", false), T(5));
    await repo.record(pipelineId, "1", state("1", "feature", true), T(3));
    expect(await repo.openFrom(pipelineId, "feature")).toBeNull();
    await repo.record(pipelineId, "1", state("1", "feature", true), T(7));
    expect(await repo.openFrom(pipelineId, "feature")).not.toBeNull();
  });

  it("forgets a pipeline's pull requests", async () => {
    const repo = await make();
    const pipelineId = randomUUID();
    await repo.record(pipelineId, "1", state("1", "feature", true), T(1));
    await repo.removeOfPipeline(pipelineId);
    expect(await repo.openFrom(pipelineId, "feature")).toBeNull();
  });
});
