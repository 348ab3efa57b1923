import { create } from "@bufbuild/protobuf";
import { BuildSchema } from "@conveyor/proto/builds";
import type { Logger } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import { createMemoryWebhookRepository } from "../store/memory-webhook-repository.js";
import type { WebhookDoc } from "../store/webhook-repository.js";
import { createOrganizationWebhooksHandler } from "../webhooks/organization-webhooks-handler.js";
import {
  announceWebhooksChanged,
  createWebhookCache,
  subscribeWebhookChanges,
  WEBHOOKS_CHANGED_SUBJECT,
} from "./webhook-cache.js";

const hook = (id: string, organizationId = "o-1"): WebhookDoc => ({
  _id: id,
  organizationId,
  url: "https://hooks.example/ci",
  events: ["build.scheduled"],
  pipelineIds: [],
  tokenMode: "token",
  token: "t",
  description: "",
  createdAt: new Date(0),
  createdBy: "u-1",
});

/** A cache over an in-memory repository that counts the lists it reads; announcements are recorded. */
function setup(ttlMs = 30_000) {
  let clock = 0;
  const stored = createMemoryWebhookRepository();
  const listed: string[] = [];
  const counted = {
    ...stored,
    list: (organizationId: string) => {
      listed.push(organizationId);
      return stored.list(organizationId);
    },
  };
  const announced: string[] = [];
  const cache = createWebhookCache(counted, {
    ttlMs,
    max: 100,
    now: () => clock,
    announce: (organizationId) => announced.push(organizationId),
  });
  return { cache, stored, listed, announced, tick: (ms: number) => (clock += ms) };
}

describe("createWebhookCache", () => {
  it("reads an organization's webhooks once, an empty list included", async () => {
    const { cache, listed } = setup();
    expect(await cache.list("o-1")).toEqual([]);
    expect(await cache.list("o-1")).toEqual([]);
    expect(listed).toEqual(["o-1"]);
  });

  it("drops and announces an organization's list on every write through its repository, failed ones included", async () => {
    const { cache, listed, announced } = setup();
    await cache.list("o-1");
    await cache.repository.insert(hook("w-1"), 50);
    expect((await cache.list("o-1")).map((h) => h._id)).toEqual(["w-1"]);
    await cache.repository.update("o-1", "w-1", { description: "changed" });
    expect((await cache.list("o-1"))[0]?.description).toBe("changed");
    await cache.repository.remove("o-1", "w-1");
    expect(await cache.list("o-1")).toEqual([]);
    expect(await cache.repository.insert(hook("w-2"), 0)).toBe(false);
    expect(listed).toEqual(["o-1", "o-1", "o-1", "o-1"]);
    expect(announced).toEqual(["o-1", "o-1", "o-1", "o-1"]);
  });

  it("keeps organizations apart, and reads again after the TTL (a lost announcement)", async () => {
    const { cache, stored, listed, tick } = setup(1_000);
    await cache.list("o-1");
    await cache.list("o-2");
    await stored.insert(hook("w-9", "o-2"), 50); // written by another replica
    expect(await cache.list("o-2")).toEqual([]);
    tick(1_000);
    expect((await cache.list("o-2")).map((h) => h._id)).toEqual(["w-9"]);
    expect(listed).toEqual(["o-1", "o-2", "o-2"]);
  });

  it("lets the webhooks handler answer a quiet organization's events without reading or rendering", async () => {
    const { cache, listed } = setup();
    const body = jest.fn(async () => ({}));
    const handler = createOrganizationWebhooksHandler(cache, { body });
    const build = create(BuildSchema, { organizationId: "o-1", pipelineId: "p-1", state: "scheduled" });
    for (let i = 0; i < 3; i++) {
      expect(await handler.intents({ type: "build", kind: "build_created", seq: i, build, previousState: "" })).toEqual(
        [],
      );
    }
    expect(listed).toEqual(["o-1"]);
    expect(body).not.toHaveBeenCalled();
  });
});

const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("webhook change announcements", () => {
  it("drop only the announced organization's list, and a broken subscription drops every list", async () => {
    const nats = createFakeNats();
    const a = setup();
    const stops = [subscribeWebhookChanges({ nc: nats.nc }, a.cache, logger)];
    try {
      await a.cache.list("o-1");
      await a.cache.list("o-2");
      announceWebhooksChanged({ nc: nats.nc }, "o-1"); // as replica b does after a write
      await settle();
      await a.cache.list("o-1");
      await a.cache.list("o-2");
      expect(a.listed).toEqual(["o-1", "o-2", "o-1"]);
      nats.fail(WEBHOOKS_CHANGED_SUBJECT);
      await waitFor(() => nats.opened(WEBHOOKS_CHANGED_SUBJECT) === 2);
      expect(a.cache.size).toBe(0);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
    }
  });
});
