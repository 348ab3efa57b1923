import type { Pipeline } from "@conveyor/proto/pipelines";
import { createLogger, newId } from "@conveyor/runtime";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type Db, MongoClient } from "mongodb";
import {
  createMongoInvalidationBacklog,
  INVALIDATION_BACKLOG_COLLECTION,
  type InvalidationBacklogDoc,
} from "../store/invalidation-backlog-repository.js";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";
import { type InvalidationFeed, startInvalidationFeed } from "./cache-invalidation-feed.js";
import { INVALIDATION_STREAM, INVALIDATION_SUBJECT, openInvalidationStream } from "./invalidation-stream.js";
import { createReadCache } from "./read-cache.js";

// Two replicas of the builds service, each with its own read cache and cache invalidation feed, over one database and
// the stack's real NATS: what one replica acknowledges, the other never hides behind what it kept.
const logger = createLogger("test", "silent");
const NO_INVALIDATION = { builds: [], pipelines: [], organizations: [] };

interface Replica {
  client: Client;
  feed: InvalidationFeed;
  nc: NatsConnection;
  /** Database commands on builds and jobs this replica's reads sent. */
  reads(): number;
  close(): Promise<void>;
}

const databases = testDatabases("it_read_cache");
let db: Db;
const replicas: Replica[] = [];

async function openReplica(): Promise<Replica> {
  const mongo = new MongoClient(process.env.MONGODB_URL ?? "", { monitorCommands: true });
  let reads = 0;
  mongo.on("commandStarted", (e) => {
    const collection = (e.command as { find?: unknown }).find;
    if (e.commandName === "find" && (collection === "builds" || collection === "jobs")) reads++;
  });
  await mongo.connect();
  const rdb = mongo.db(db.databaseName);
  const nc = await connect({ servers: process.env.NATS_URL ?? "" });
  const cache = createReadCache();
  const feed = await startInvalidationFeed({
    stream: await openInvalidationStream({ nc, js: jetstream(nc), logger }),
    backlog: await createMongoInvalidationBacklog(rdb),
    cache,
    logger,
    newId,
    // A loaded 2-core machine may take longer than the default to deliver: the tests assert what is served from
    // memory, so they wait rather than fall back to the database.
    barrierTimeoutMs: 5_000,
  });
  const { client } = await openBuildsService(rdb, { logger, readCache: { cache, feed } });
  const replica: Replica = {
    client,
    feed,
    nc,
    reads: () => reads,
    async close() {
      await feed.stop();
      await nc.close();
      await mongo.close();
    },
  };
  replicas.push(replica);
  return replica;
}

beforeAll(async () => {
  await databases.connect();
  db = databases.create();
});
afterAll(async () => {
  for (const r of replicas) await r.close();
  await databases.close();
});

const pipelineOf = pipelineFromYaml;

const YAML = "steps:\n  - {label: one, command: run}\n  - wait\n  - {label: two, command: run}";

async function createOn(client: Client, pipeline: Pipeline) {
  const { build } = await client.createBuild({ pipeline, commit: "abc", branch: "main", organizationSlug: "acme" });
  if (!build) throw new Error("no build");
  return build;
}

describe("the builds read cache across two replicas", () => {
  let a: Replica;
  let b: Replica;
  beforeAll(async () => {
    a = await openReplica();
    b = await openReplica();
  });

  it("serves a build read again from memory, without reading builds or jobs", async () => {
    const pipeline = pipelineOf(YAML);
    const build = await createOn(a.client, pipeline);
    const first = await b.client.getBuild({ pipelineId: pipeline.id, number: build.number });
    const before = b.reads();
    const again = await b.client.getBuild({ pipelineId: pipeline.id, number: build.number });
    expect(b.reads()).toBe(before);
    expect(again.build).toEqual(first.build);
    const page = await b.client.listBuilds({
      organizationIds: [pipeline.organizationId],
      pipelineId: pipeline.id,
      perPage: 30,
    });
    const pageReads = b.reads();
    const pageAgain = await b.client.listBuilds({
      organizationIds: [pipeline.organizationId],
      pipelineId: pipeline.id,
      perPage: 30,
    });
    expect(b.reads()).toBe(pageReads);
    expect(pageAgain).toEqual(page);
  });

  it("asks the invalidation stream for its last sequence with direct gets, which the stream allows", async () => {
    const jsm = await jetstreamManager(a.nc);
    const info = await jsm.streams.info(INVALIDATION_STREAM);
    expect([info.config.allow_direct, info.config.num_replicas]).toEqual([true, 1]);
    const last = await jsm.direct.getMessage(INVALIDATION_STREAM, { last_by_subj: INVALIDATION_SUBJECT });
    expect(last?.seq).toBe(info.state.last_seq);
  });

  it("a read waits until every invalidation in the stream when it began is applied", async () => {
    const pipeline = pipelineOf(YAML);
    const build = await createOn(a.client, pipeline);
    const ref = { pipelineId: pipeline.id, number: build.number };
    const js = jetstream(a.nc);
    for (let i = 0; i < 10; i++) {
      await b.client.getBuild(ref);
      await b.client.getBuild(ref);
      // An invalidation lands in the stream (acknowledged) just before B's next read: B must apply it before answering.
      await js.publish(
        INVALIDATION_SUBJECT,
        new TextEncoder().encode(JSON.stringify({ ...NO_INVALIDATION, builds: [build.id] })),
      );
      const before = b.reads();
      await b.client.getBuild(ref);
      expect(b.reads()).toBeGreaterThan(before);
    }
  });

  it("never answers older than a change the other replica acknowledged (cancel, job runs, new builds)", async () => {
    const pipeline = pipelineOf(YAML);
    for (let i = 0; i < 15; i++) {
      const build = await createOn(a.client, pipeline);
      const ref = { pipelineId: pipeline.id, number: build.number };
      // B keeps the build and the pipeline's page…
      expect((await b.client.getBuild(ref)).build?.state).toBe("scheduled");
      const listed = await b.client.listBuilds({
        organizationIds: [pipeline.organizationId],
        pipelineId: pipeline.id,
        perPage: 5,
      });
      expect(listed.builds[0]?.number).toBe(build.number);
      // …then A changes it: B's next answer shows the change at once.
      const job = build.jobs[0];
      if (!job) throw new Error("no job");
      await a.client.assignJob({ jobId: job.id, agent: { id: "agent", name: "agent", hostname: "h", metaData: [] } });
      const assigned = await b.client.getBuild(ref);
      expect(assigned.build?.jobs[0]?.state).toBe("assigned");
      await a.client.cancelBuild(ref);
      const canceled = await b.client.getBuild(ref);
      expect(["canceling", "canceled"]).toContain(canceled.build?.state);
      const page = await b.client.listBuilds({
        organizationIds: [pipeline.organizationId],
        pipelineId: pipeline.id,
        perPage: 5,
      });
      expect(page.builds[0]?.state).toBe(canceled.build?.state);
    }
    const next = await createOn(a.client, pipeline);
    const page = await b.client.listBuilds({
      organizationIds: [pipeline.organizationId],
      pipelineId: pipeline.id,
      perPage: 5,
    });
    expect(page.builds[0]?.number).toBe(next.number);
  });

  it("publishes the invalidations of concurrent writes together, and the other replica sees every write", async () => {
    const pipeline = pipelineOf(YAML);
    const { number } = await createOn(a.client, pipeline);
    // B keeps the pipeline's page before the burst.
    const list = { organizationIds: [pipeline.organizationId], pipelineId: pipeline.id, perPage: 30 };
    expect((await b.client.listBuilds(list)).builds.map((x) => x.number)).toEqual([number]);
    let messages = 0;
    const sub = a.nc.subscribe(INVALIDATION_SUBJECT, {
      callback: () => {
        messages++;
      },
    });
    await a.nc.flush();
    const created = await Promise.all(Array.from({ length: 12 }, () => createOn(a.client, pipeline)));
    // Three invalidating writes per create (the build, its jobs, its first state); together, far fewer messages.
    await a.nc.flush();
    sub.unsubscribe();
    expect(messages).toBeGreaterThan(0);
    expect(messages).toBeLessThan(3 * created.length);
    const page = await b.client.listBuilds(list);
    expect(page.builds.map((x) => x.number).sort((x, y) => x - y)).toEqual(
      [number, ...created.map((c) => c.number)].sort((x, y) => x - y),
    );
    for (const c of created) {
      const got = await b.client.getBuild({ pipelineId: pipeline.id, number: c.number });
      expect([c.number, got.build?.state, got.build?.jobs.length]).toEqual([c.number, "scheduled", c.jobs.length]);
    }
  });

  it("reads a page and a build a change dropped once for every request waiting for them, each with the change", async () => {
    const pipeline = pipelineOf(YAML);
    const list = { organizationIds: [pipeline.organizationId], pipelineId: pipeline.id, perPage: 30 };
    const first = await createOn(a.client, pipeline);
    await b.client.listBuilds(list);
    await b.client.getBuild({ pipelineId: pipeline.id, number: first.number });
    // A's change drops B's page and build; ten pollers then ask B at once.
    const next = await createOn(a.client, pipeline);
    await a.client.cancelBuild({ pipelineId: pipeline.id, number: first.number });
    const before = b.reads();
    const [pages, builds] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => b.client.listBuilds(list))),
      Promise.all(
        Array.from({ length: 10 }, () => b.client.getBuild({ pipelineId: pipeline.id, number: first.number })),
      ),
    ]);
    for (const page of pages)
      expect(page.builds.map((x) => [x.number, x.state])).toEqual([
        [next.number, "scheduled"],
        [first.number, "canceled"],
      ]);
    for (const got of builds) expect(got.build?.state).toBe("canceled");
    // The page's builds, the jobs it does not hold, and the build with its jobs (two finds) are four finds; a
    // request that came after a barrier round may read again. Unshared it would be ten of each: forty.
    expect(b.reads() - before).toBeLessThanOrEqual(8);
  });

  it("names answers by content: the same version on either replica, not_modified until a change, then the change", async () => {
    const pipeline = pipelineOf(YAML);
    const build = await createOn(a.client, pipeline);
    const ref = { pipelineId: pipeline.id, number: build.number };
    const list = { organizationIds: [pipeline.organizationId], pipelineId: pipeline.id, perPage: 5 };
    const onA = await a.client.getBuild(ref);
    const onB = await b.client.getBuild(ref);
    expect(onA.version).not.toBe("");
    expect(onB.version).toBe(onA.version);
    const pageA = await a.client.listBuilds(list);
    expect((await b.client.listBuilds(list)).version).toBe(pageA.version);
    // Held versions are confirmed without the builds.
    const held = await b.client.getBuild({ ...ref, ifNoneMatch: onA.version });
    expect(held).toMatchObject({ notModified: true, version: onA.version });
    expect(held.build).toBeUndefined();
    const heldPage = await b.client.listBuilds({ ...list, ifNoneMatch: pageA.version });
    expect(heldPage).toMatchObject({ notModified: true, version: pageA.version, builds: [] });
    // Retried jobs shown or not, jobs left out: other answers, other versions.
    expect((await b.client.getBuild({ ...ref, includeRetriedJobs: true })).version).toBe(onA.version);
    expect((await b.client.listBuilds({ ...list, excludeJobs: true })).version).not.toBe(pageA.version);
    // A changes the build: B's answer to the old version is the changed build, under a new version.
    const job = build.jobs[0];
    if (!job) throw new Error("no job");
    await a.client.assignJob({ jobId: job.id, agent: { id: "agent", name: "agent", hostname: "h", metaData: [] } });
    const changed = await b.client.getBuild({ ...ref, ifNoneMatch: onA.version });
    expect(changed.notModified).toBe(false);
    expect(changed.build?.jobs[0]?.state).toBe("assigned");
    expect(changed.version).not.toBe(onA.version);
    const changedPage = await b.client.listBuilds({ ...list, ifNoneMatch: pageA.version });
    expect(changedPage.notModified).toBe(false);
    expect(changedPage.builds[0]?.jobs[0]?.state).toBe("assigned");
    // A new build on A changes the page B answers, though none of the builds it held changed.
    await createOn(a.client, pipeline);
    const grown = await b.client.listBuilds({ ...list, ifNoneMatch: changedPage.version });
    expect(grown.notModified).toBe(false);
    expect(grown.builds).toHaveLength(2);
  });

  it("a change whose invalidation NATS would not take waits in the backlog, and reads go to the database until it is published", async () => {
    const pipeline = pipelineOf(YAML);
    const cut = await openReplica();
    const build = await createOn(cut.client, pipeline);
    const ref = { pipelineId: pipeline.id, number: build.number };
    expect((await b.client.getBuild(ref)).build?.state).toBe("scheduled");
    // The writer loses NATS: its next change is acknowledged with its invalidation in the backlog.
    await cut.nc.close();
    await cut.client.cancelBuild(ref);
    const backlog = db.collection<InvalidationBacklogDoc>(INVALIDATION_BACKLOG_COLLECTION);
    expect(await backlog.countDocuments()).toBeGreaterThan(0);
    const before = b.reads();
    expect(["canceling", "canceled"]).toContain((await b.client.getBuild(ref)).build?.state);
    expect(b.reads()).toBeGreaterThan(before);
    // Another process's relay publishes the backlog; then B serves from memory again, and the change.
    await a.feed.relay({ force: true });
    expect(await backlog.countDocuments()).toBe(0);
    // A look at the backlog stands for 50 ms: after that, B sees it empty.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const state = (await b.client.getBuild(ref)).build?.state;
    expect(["canceling", "canceled"]).toContain(state);
    const settled = b.reads();
    expect((await b.client.getBuild(ref)).build?.state).toBe(state);
    expect(b.reads()).toBe(settled);
  });
});
