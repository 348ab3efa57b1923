import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService, JobEventType, PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import {
  connectNats,
  consumeEvents,
  createEventPublisher,
  createLogger,
  createMongoOutboxStore,
  decodeEvent,
  jetStreamPublish,
  type NatsHandle,
  type OutboxDoc,
  SUBJECTS,
  stepMessages,
} from "@conveyor/runtime";
import type { JetStreamClient } from "@nats-io/jetstream";
import { MongoClient } from "mongodb";
import { type BuildsParts, createBuildsParts } from "../builds-context.js";
import { createBuildsService } from "../builds-service.js";
import { createMongoBuildRepository } from "../store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "../store/concurrency-slot-repository.js";
import { createMongoJobLogRepository } from "../store/job-log-repository.js";
import { createMongoPipelineUploadRepository } from "../store/pipeline-upload-repository.js";

// Against the stack's real MongoDB-wire server and NATS JetStream. NATS "goes down" (a JetStream client that throws)
// while a build runs and finishes; the pipeline's counters must still converge once it is back, even when nothing
// happens on the pipeline for longer than the periodic re-announcement looks back (10 minutes).
const dbName = `it_builds_outbox_${Date.now()}`;
const logger = createLogger("test", "silent");
let mongo: MongoClient;
let nats: NatsHandle;
let natsDown = false;
let clock = new Date();
let parts: BuildsParts;
let client: ReturnType<typeof createClient<typeof BuildsService>>;
let stopConsumer: () => Promise<void>;
/** What the pipelines service's counts consumer keeps: the newest snapshot per pipeline. */
const counters = new Map<string, { at: number; scheduledBuilds: number; runningBuilds: number; runningJobs: number }>();

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  nats = await connectNats(process.env.NATS_URL ?? "", "it-builds-outbox", logger);
  const flaky = {
    publish(...args: Parameters<JetStreamClient["publish"]>) {
      return natsDown ? Promise.reject(new Error("NATS is down")) : nats.js.publish(...args);
    },
  } as JetStreamClient;
  const db = mongo.db(dbName);
  parts = createBuildsParts({
    repo: await createMongoBuildRepository(db),
    logs: await createMongoJobLogRepository(db),
    uploads: await createMongoPipelineUploadRepository(db),
    slots: await createMongoConcurrencySlotRepository(db),
    events: createEventPublisher(flaky, logger),
    outbox: {
      store: await createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
      publish: jetStreamPublish(flaky),
    },
    logger,
    now: () => clock,
  });
  client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, createBuildsService(parts))),
  );
  stopConsumer = await consumeEvents(nats, {
    durable: `it_counts_${Date.now()}`,
    subject: SUBJECTS.builds.pipelineCountsChanged,
    logger,
    async handle(data) {
      const e = decodeEvent(PipelineCountsChangedSchema, data);
      const at = e.at ? timestampDate(e.at).getTime() : 0;
      if ((counters.get(e.pipelineId)?.at ?? -1) > at) return;
      counters.set(e.pipelineId, { ...e, at });
    },
  });
});
afterAll(async () => {
  await stopConsumer();
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
  await nats.close();
});

const eventually = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return check();
};
const tick = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
};

describe("pipeline counters through the outbox", () => {
  it("converge after NATS was down while a build ran and finished, however long the pipeline then stays idle", async () => {
    const p = create(PipelineSchema, {
      id: randomUUID(),
      organizationId: randomUUID(),
      slug: "app",
      name: "App",
      defaultBranch: "main",
      steps: stepMessages([{ type: "script", name: "a", command: "true", agent_query_rules: [] }]),
    });
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    expect(await eventually(() => counters.get(p.id)?.scheduledBuilds === 1)).toBe(true);

    natsDown = true;
    const jobId = build?.jobs[0]?.id ?? "";
    for (const event of [JobEventType.ASSIGN, JobEventType.ACCEPT, JobEventType.START]) {
      tick(1_000);
      await client.transitionJob({ jobId, event });
    }
    tick(1_000);
    await client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus: 0 });
    expect((await client.getBuild({ pipelineId: p.id, number: build?.number ?? 0 })).build?.state).toBe("passed");
    await parts.duties.countsIdle();
    // Every announcement of the changes failed: the consumer still believes the build is scheduled.
    expect(counters.get(p.id)?.scheduledBuilds).toBe(1);

    // NATS comes back; nothing happens on the pipeline for 11 minutes, then the builds process's timers run.
    tick(11 * 60_000);
    natsDown = false;
    await parts.duties.republishCounts();
    await parts.duties.relayOutbox();
    expect(
      await eventually(() => counters.get(p.id)?.scheduledBuilds === 0 && counters.get(p.id)?.runningBuilds === 0),
    ).toBe(true);
    expect(await mongo.db(dbName).collection("outbox").countDocuments()).toBe(0);
  });

  it("adds no outbox entry that outlives the answer while NATS is up", async () => {
    const p = create(PipelineSchema, {
      id: randomUUID(),
      organizationId: randomUUID(),
      slug: "up",
      name: "Up",
      defaultBranch: "main",
      steps: stepMessages([{ type: "script", name: "a", command: "true", agent_query_rules: [] }]),
    });
    await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    await parts.duties.countsIdle();
    expect(counters.get(p.id)?.scheduledBuilds ?? ((await eventually(() => counters.has(p.id))) && 1)).toBe(1);
    // The entries of published events are removed in the background (events/state-events.ts).
    let left = -1;
    for (let i = 0; i < 100 && left !== 0; i++) {
      left = await mongo.db(dbName).collection("outbox").countDocuments();
      if (left !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(left).toBe(0);
  });
});
