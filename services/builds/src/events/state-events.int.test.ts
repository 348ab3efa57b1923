import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildChangedSchema, BuildsService, JobEventType, JobStateChangedSchema } from "@conveyor/proto/builds";
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
  UNCOMMITTED_AFTER_MS,
} from "@conveyor/runtime";
import type { JetStreamClient } from "@nats-io/jetstream";
import { type Db, MongoClient } from "mongodb";
import { createBuildsParts } from "../builds-context.js";
import { createBuildsService } from "../builds-service.js";
import { createMongoBuildRepository } from "../store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "../store/concurrency-slot-repository.js";
import { createMongoJobLogRepository } from "../store/job-log-repository.js";
import { createMongoPipelineUploadRepository } from "../store/pipeline-upload-repository.js";
import { jobEvent, jobEventKey } from "./state-events.js";

// Against the stack's real MongoDB-wire server and NATS JetStream: build and job events are written to the outbox
// before their change, so a process whose publishes fail (NATS down, or the process dying after its write) loses
// none of them: the relay (its own, or another replica's) publishes each, once, under the same message id.
const dbName = `it_builds_state_events_${Date.now()}`;
const logger = createLogger("test", "silent");
let mongo: MongoClient;
let db: Db;
let nats: NatsHandle;
let clock = new Date();
let stopConsumer: () => Promise<void>;
/** Every build and job event heard, in stream order. */
const heard: Array<{ subject: string; id: string; state: string; previous: string }> = [];

/** A builds process on the shared database whose JetStream publishes fail while `down()` says so. */
async function builds(down: () => boolean) {
  const flaky = {
    publish(...args: Parameters<JetStreamClient["publish"]>) {
      return down() ? Promise.reject(new Error("NATS is down")) : nats.js.publish(...args);
    },
  } as JetStreamClient;
  const parts = createBuildsParts({
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
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, createBuildsService(parts))),
  );
  return { parts, client };
}

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(dbName);
  nats = await connectNats(process.env.NATS_URL ?? "", "it-builds-state-events", logger);
  stopConsumer = await consumeEvents(nats, {
    durable: `it_state_events_${Date.now()}`,
    subject: "ci.builds.>",
    logger,
    async handle(data, subject) {
      if (subject === SUBJECTS.builds.jobStateChanged) {
        const e = decodeEvent(JobStateChangedSchema, data);
        heard.push({ subject, id: e.job?.id ?? "", state: e.job?.state ?? "", previous: e.previousState });
      } else if (subject !== SUBJECTS.builds.pipelineCountsChanged) {
        const e = decodeEvent(BuildChangedSchema, data);
        heard.push({ subject, id: e.build?.id ?? "", state: e.build?.state ?? "", previous: e.previousState });
      }
    },
  });
});
afterAll(async () => {
  await stopConsumer();
  await db.dropDatabase();
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
const pipeline = (slug: string) =>
  create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug,
    name: slug,
    defaultBranch: "main",
    steps: stepMessages([{ type: "script", name: "a", command: "true", agent_query_rules: [] }]),
  });
/** The outbox entries of these documents' events. */
const entriesOf = (...ids: string[]) =>
  db.collection("outbox").countDocuments({
    $or: ids.flatMap((id) => [{ _id: { $regex: `^job-event:${id}:` } }, { _id: { $regex: `^build-event:${id}:` } }]),
  } as object);
/** What was heard of these documents, as "subject state<-previous" lines. */
const heardOf = (...ids: string[]) =>
  heard.filter((h) => ids.includes(h.id)).map((h) => `${h.subject.split(".").pop()} ${h.state}<-${h.previous}`);

const WHOLE_RUN = [
  "build_created scheduled<-",
  "job_state_changed scheduled<-pending",
  "job_state_changed assigned<-scheduled",
  "build_state_changed running<-scheduled",
  "job_state_changed accepted<-assigned",
  "job_state_changed running<-accepted",
  "job_state_changed passed<-running",
  "build_state_changed passed<-running",
  "build_finished passed<-running",
];

describe("build and job events through the outbox", () => {
  it("every event of a build whose publishes all failed is published once by the relay, in order", async () => {
    let down = true;
    const { parts, client } = await builds(() => down);
    const p = pipeline("down");
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const jobId = build?.jobs[0]?.id ?? "";
    for (const event of [JobEventType.ASSIGN, JobEventType.ACCEPT, JobEventType.START]) {
      tick(1_000);
      await client.transitionJob({ jobId, event });
    }
    tick(1_000);
    await client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus: 0 });
    await parts.duties.countsIdle();
    expect(heardOf(build?.id ?? "", jobId)).toEqual([]);

    // NATS is back; the relay runs past the grace (twice: the second finds nothing left).
    down = false;
    tick(5_000);
    await parts.duties.relayOutbox();
    await parts.duties.relayOutbox();
    expect(await eventually(() => heardOf(build?.id ?? "", jobId).length >= WHOLE_RUN.length)).toBe(true);
    await new Promise((r) => setTimeout(r, 500));
    // Entries recorded in the same instant are relayed in no particular order: the relay orders by age only.
    expect(heardOf(build?.id ?? "", jobId).sort()).toEqual([...WHOLE_RUN].sort());
    expect(await entriesOf(build?.id ?? "", jobId)).toBe(0);
  });

  it("a process that dies after its writes, before publishing, has its events published by another replica", async () => {
    // The first process's publishes never happen (it is gone before they would); the second's work.
    const dead = await builds(() => true);
    const alive = await builds(() => false);
    const p = pipeline("dies");
    const { build } = await dead.client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const jobId = build?.jobs[0]?.id ?? "";
    await dead.client.transitionJob({ jobId, event: JobEventType.ASSIGN });
    await dead.parts.duties.countsIdle();
    tick(5_000);
    await alive.parts.duties.relayOutbox();
    // An assigned job makes its build running.
    const expected = WHOLE_RUN.slice(0, 4);
    expect(await eventually(() => heardOf(build?.id ?? "", jobId).length >= expected.length)).toBe(true);
    // A second pass (another replica's) publishes nothing more.
    await alive.parts.duties.relayOutbox();
    await new Promise((r) => setTimeout(r, 500));
    expect(heardOf(build?.id ?? "", jobId).sort()).toEqual([...expected].sort());
    expect(await entriesOf(build?.id ?? "", jobId)).toBe(0);
  });

  it("a publish repeated under its message id is heard once", async () => {
    const { parts, client } = await builds(() => false);
    const p = pipeline("twice");
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const job = await parts.ctx.repo.findJob(build?.jobs[0]?.id ?? "");
    if (!job) throw new Error("no job");
    const before = heardOf(job.id).length;
    const raw = jetStreamPublish(nats.js);
    const event = jobEvent(job, "pending");
    await raw(event.subject, event.data, "job-event:x:same");
    await raw(event.subject, event.data, "job-event:x:same");
    await eventually(() => heardOf(job.id).length > before);
    await new Promise((r) => setTimeout(r, 500));
    expect(heardOf(job.id).length).toBe(before + 1);
  });

  it("an entry whose write never happened is kept for a while, then dropped unpublished", async () => {
    const { parts, client } = await builds(() => false);
    const p = pipeline("never");
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const job = await parts.ctx.repo.findJob(build?.jobs[0]?.id ?? "");
    if (!job) throw new Error("no job");
    // Recorded as a transition would be, but the process died before its write.
    await parts.ctx.outbox.recordAll([
      { key: jobEventKey(job.id, "never-written"), event: jobEvent({ ...job, state: "canceled" }, "scheduled") },
    ]);
    tick(5_000);
    await parts.duties.relayOutbox();
    expect(await entriesOf(job.id)).toBe(1);
    tick(UNCOMMITTED_AFTER_MS + 1_000);
    await parts.duties.relayOutbox();
    expect(await entriesOf(job.id)).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(heardOf(job.id).filter((line) => line.startsWith("job_state_changed canceled"))).toEqual([]);
  });

  it("a compare-and-set that loses records nothing that outlives it", async () => {
    const { parts, client } = await builds(() => false);
    const p = pipeline("lost");
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const job = await parts.ctx.repo.findJob(build?.jobs[0]?.id ?? "");
    if (!job) throw new Error("no job");
    expect(await parts.ctx.stateEvents.changeJob({ ...job, state: "running" }, { state: "passed" })).toBeNull();
    expect(await entriesOf(job.id)).toBe(0);
  });
});
