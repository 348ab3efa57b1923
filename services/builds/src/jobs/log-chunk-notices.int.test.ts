import { randomBytes } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService, JobLogChunkStoredSchema } from "@conveyor/proto/builds";
import { createLogger, jobLogSubject } from "@conveyor/runtime";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { createMemoryBuildsService } from "../testing.js";
import { createLogChunkNotices } from "./log-chunk-notices.js";

// The builds service announces each stored log chunk on the job's core NATS subject, through the stack's real
// nats-server: with its gzip bytes when they fit the server's max_payload, without them when not, after the chunk is
// stored, again when the agent sends it again; a publish that fails is counted and the upload still succeeds.
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: process.env.NATS_URL ?? "" });
});
afterAll(async () => {
  await nc.drain();
});

/** The builds service in memory announcing through `conn`, and a job of it that an agent runs. */
async function runningJob(conn: NatsConnection) {
  const notices = createLogChunkNotices(conn, createLogger("test", "silent"));
  const memory = createMemoryBuildsService({ logNotices: notices });
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, memory.service)),
  );
  const { jobs } = await memory.seedBuild();
  const jobId = jobs[0]?.id ?? "";
  await client.assignJob({ jobId, agent: { id: "agent-1", name: "one" } });
  await client.acceptJob({ jobId, agentId: "agent-1" });
  return { notices, memory, client, jobId };
}

/** The next `count` messages of a subscription, decoded; fails after 5 s. */
async function next(sub: Subscription, count: number) {
  const got = [];
  const timeout = setTimeout(() => sub.unsubscribe(), 5_000);
  for await (const msg of sub) {
    got.push(fromBinary(JobLogChunkStoredSchema, msg.data));
    if (got.length === count) break;
  }
  clearTimeout(timeout);
  if (got.length < count) throw new Error(`only ${got.length} of ${count} notices arrived`);
  return got;
}

describe("log chunk notices", () => {
  it("announces a stored chunk with its gzip bytes on the job's subject, once stored, and again when sent again", async () => {
    const { notices, memory, client, jobId } = await runningJob(nc);
    const sub = nc.subscribe(jobLogSubject(jobId));
    await nc.flush();
    const bytes = Buffer.from("hello\nworld\n");
    const chunk = { jobId, sequence: 1, offset: 0n, size: bytes.length, data: gzipSync(bytes) };
    await client.appendJobLog(chunk);
    await client.appendJobLog(chunk);
    const [first, again] = await next(sub, 2);
    expect(first?.jobId).toBe(jobId);
    expect(first?.offset).toBe(0n);
    expect(first?.size).toBe(bytes.length);
    expect(gunzipSync(first?.gzip ?? new Uint8Array())).toEqual(bytes);
    expect(again).toEqual(first);
    // It was stored before it was announced.
    expect(await memory.repos.logs.findChunk(jobId, 0)).toMatchObject({ offset: 0, size: bytes.length });
    expect(notices.stats).toEqual({ published: 2, withoutBytes: 0, failed: 0 });
  });

  it("announces a chunk whose gzip bytes exceed the server's max_payload without them", async () => {
    const { notices, client, jobId } = await runningJob(nc);
    const maxPayload = nc.info?.max_payload ?? 0;
    expect(maxPayload).toBeGreaterThan(0);
    // Random bytes do not compress: a whole MiB gzips to a little more than the default 1 MiB limit.
    const bytes = randomBytes(1024 * 1024);
    const gzip = gzipSync(bytes);
    expect(gzip.length).toBeGreaterThan(maxPayload);
    const sub = nc.subscribe(jobLogSubject(jobId));
    await nc.flush();
    await client.appendJobLog({ jobId, sequence: 1, offset: 0n, size: bytes.length, data: gzip });
    const [notice] = await next(sub, 1);
    expect(notice?.size).toBe(bytes.length);
    expect(notice?.gzip.length).toBe(0);
    expect(notices.stats).toEqual({ published: 1, withoutBytes: 1, failed: 0 });
  });

  it("counts a publish that fails (a closed connection) and still stores the chunk", async () => {
    const closed = await connect({ servers: process.env.NATS_URL ?? "" });
    const { notices, memory, client, jobId } = await runningJob(closed);
    await closed.close();
    const bytes = Buffer.from("stored anyway\n");
    await client.appendJobLog({ jobId, sequence: 1, offset: 0n, size: bytes.length, data: gzipSync(bytes) });
    expect(notices.stats).toEqual({ published: 0, withoutBytes: 0, failed: 1 });
    expect(await memory.repos.logs.findChunk(jobId, 0)).toMatchObject({ size: bytes.length });
  });
});
