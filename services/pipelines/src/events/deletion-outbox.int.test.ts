import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { PipelineDeletedSchema, type PipelinesService } from "@conveyor/proto/pipelines";
import {
  connectNats,
  consumeEvents,
  createEventPublisher,
  createLogger,
  createMongoOutboxStore,
  decodeEvent,
  encodeEvent,
  jetStreamPublish,
  type NatsHandle,
  type OutboxDoc,
  SUBJECTS,
} from "@conveyor/runtime";
import type { JetStreamClient } from "@nats-io/jetstream";
import { MongoClient } from "mongodb";
import { createPipelinesService } from "../pipelines-service.js";
import { createMemoryScheduleRepository } from "../store/memory-schedule-repository.js";
import {
  createMongoPipelinesRepository,
  type PipelineDoc,
  type PipelinesRepository,
} from "../store/pipelines-repository.js";
import { createPipelinesOutbox, deletionKey } from "./deletion-outbox.js";

// Against the stack's real MongoDB-wire server and NATS JetStream: NATS "goes down" for the first publishes (a
// JetStream client that throws for them), and a deleted pipeline's event must still reach its consumer.
const dbName = `it_pipelines_outbox_${Date.now()}`;
const logger = createLogger("test", "silent");
let mongo: MongoClient;
let nats: NatsHandle;
let repo: PipelinesRepository;
let clock = new Date();
let failures = 0;
let service: ServiceImpl<typeof PipelinesService>;
let outbox: ReturnType<typeof createPipelinesOutbox>;
const deleted = new Set<string>();
let stopConsumer: () => Promise<void>;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  nats = await connectNats(process.env.NATS_URL ?? "", "it-pipelines-outbox", logger);
  const flaky = {
    publish(...args: Parameters<JetStreamClient["publish"]>) {
      if (failures > 0) {
        failures--;
        return Promise.reject(new Error("NATS is down"));
      }
      return nats.js.publish(...args);
    },
  } as JetStreamClient;
  const db = mongo.db(dbName);
  repo = await createMongoPipelinesRepository(db);
  outbox = createPipelinesOutbox({
    repo,
    store: await createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
    publish: jetStreamPublish(flaky),
    logger,
    now: () => clock,
  });
  service = createPipelinesService({
    repo,
    schedules: createMemoryScheduleRepository().repo,
    events: createEventPublisher(flaky, logger),
    outbox,
    clusters: { getCluster: async () => ({}) } as never,
  });
  // A stand-in for identity's consumer of deletions (which drops the pipeline's team associations and rules).
  stopConsumer = await consumeEvents(nats, {
    durable: `it_deletions_${Date.now()}`,
    subject: SUBJECTS.pipelines.deleted,
    logger,
    async handle(data) {
      deleted.add(decodeEvent(PipelineDeletedSchema, data).pipelineId);
    },
  });
});
afterAll(async () => {
  await stopConsumer();
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
  await nats.close();
});

async function pipeline(): Promise<PipelineDoc> {
  const at = new Date();
  const id = randomUUID();
  const doc = {
    _id: id,
    organizationId: randomUUID(),
    slug: `p-${id.slice(0, 8)}`,
    name: `P ${id.slice(0, 8)}`,
    nameKey: `p ${id.slice(0, 8)}`,
    description: null,
    repository: "r",
    clusterId: null,
    pipelineTemplateUuid: null,
    branchConfiguration: null,
    defaultBranch: "main",
    provider: { id: "git", settings: {}, webhookToken: "w" },
    skipQueuedBranchBuilds: false,
    skipQueuedBranchBuildsFilter: null,
    cancelRunningBranchBuilds: false,
    cancelRunningBranchBuildsFilter: null,
    allowRebuilds: true,
    createdBy: { id: "u", name: "U", email: "u@example.com", avatarUrl: null, createdAt: null },
    createdAt: at,
    updatedAt: at,
    archivedAt: null,
    env: {},
    visibility: "private",
    tags: null,
    configuration: "steps: []",
    definitionJson: '{"steps":[]}',
    counts: { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 },
    teams: {},
    badgeToken: "b",
  } as PipelineDoc;
  await repo.insert(doc);
  return doc;
}

const eventually = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return check();
};

/** What the relay of every pipelines process does every 2 s, after the grace. */
const relayLater = async () => {
  clock = new Date(clock.getTime() + 10_000);
  return outbox.relay();
};

describe("pipeline deletion events through the outbox", () => {
  it("acknowledges a deletion while NATS is down, and its consumer still sees it once NATS is back", async () => {
    const p = await pipeline();
    failures = 1;
    await service.deletePipeline({ organizationId: p.organizationId, pipeline: p._id } as never, {} as never);
    expect(await repo.find(p.organizationId, p._id)).toBeNull();
    expect(failures).toBe(0);

    expect(await eventually(() => deleted.has(p._id), 1_000)).toBe(false);
    const relayed = await relayLater();
    expect(await eventually(() => deleted.has(p._id))).toBe(true);
    expect(relayed).toBe(1);
    expect(
      await mongo
        .db(dbName)
        .collection("outbox")
        .countDocuments({ _id: deletionKey(p._id) } as never),
    ).toBe(0);
  });

  it("publishes at once and leaves nothing behind while NATS is up", async () => {
    const p = await pipeline();
    await service.deletePipeline({ organizationId: p.organizationId, pipeline: p._id } as never, {} as never);
    expect(await eventually(() => deleted.has(p._id))).toBe(true);
    expect(
      await mongo
        .db(dbName)
        .collection("outbox")
        .countDocuments({ _id: deletionKey(p._id) } as never),
    ).toBe(0);
    expect(await relayLater()).toBe(0);
  });

  it("drops a recorded deletion that never happened (the process died before deleting) instead of publishing it", async () => {
    const p = await pipeline();
    await outbox.record(
      deletionKey(p._id),
      encodeEvent(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, {
        pipelineId: p._id,
        organizationId: p.organizationId,
      }),
    );
    expect(await relayLater()).toBe(0); // the pipeline is still there: maybe a slow deletion, so it waits
    clock = new Date(clock.getTime() + 120_000);
    expect(await outbox.relay()).toBe(0);
    expect(
      await mongo
        .db(dbName)
        .collection("outbox")
        .countDocuments({ _id: deletionKey(p._id) } as never),
    ).toBe(0);
    expect(await eventually(() => deleted.has(p._id), 1_000)).toBe(false);
    expect(await repo.find(p.organizationId, p._id)).not.toBeNull();
  });

  it("lets JetStream keep one copy when the same entry is published twice (its msgID)", async () => {
    const p = await pipeline();
    const seen: string[] = [];
    const stop = await consumeEvents(nats, {
      durable: `it_deletions_dup_${Date.now()}`,
      subject: SUBJECTS.pipelines.deleted,
      logger,
      async handle(data) {
        const id = decodeEvent(PipelineDeletedSchema, data).pipelineId;
        if (id === p._id) seen.push(id);
      },
    });
    failures = 0;
    const event = encodeEvent(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, { pipelineId: p._id });
    const version = await outbox.record(deletionKey(p._id), event);
    await outbox.send(deletionKey(p._id), version, event);
    await outbox.send(deletionKey(p._id), version, event);
    expect(await eventually(() => seen.length > 0)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(seen).toHaveLength(1);
    await stop();
  });
});
