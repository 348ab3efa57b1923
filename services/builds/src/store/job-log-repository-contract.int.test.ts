import { MongoClient } from "mongodb";
import { createMongoJobLogRepository, type JobLogRepository, type LogChunk } from "./job-log-repository.js";
import { createMemoryJobLogRepository } from "./memory-job-log-repository.js";

// The JobLogRepository contract, one set of cases run against the MongoDB implementation over the real MongoDB-wire
// server and against the in-memory one (testing.ts): one chunk per (job, offset), read back in offset order.
let mongo: MongoClient;
const dbName = `it_job_log_contract_${Date.now()}`;
let databases = 0;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  for (let i = 1; i <= databases; i++) await mongo.db(`${dbName}_${i}`).dropDatabase();
  await mongo.close();
});

const implementations: Array<[string, () => Promise<JobLogRepository>]> = [
  ["on MongoDB", () => createMongoJobLogRepository(mongo.db(`${dbName}_${++databases}`))],
  ["in memory", async () => createMemoryJobLogRepository()],
];

const chunk = (jobId: string, sequence: number, offset: number, size: number): LogChunk => ({
  jobId,
  sequence,
  offset,
  size,
  sha256: `sha-${offset}`,
  gzip: new Uint8Array([sequence, offset % 256, size % 256]),
});
const span = ({ offset, size, sha256 }: LogChunk) => ({ offset, size, sha256 });

describe.each(implementations)("the JobLogRepository %s", (_name, make) => {
  let logs: JobLogRepository;
  beforeEach(async () => {
    logs = await make();
  });

  it("stores one chunk per offset and reads a job's chunks in offset order, and the one nearest below an offset", async () => {
    const [a, b, c] = [chunk("j-1", 1, 0, 10), chunk("j-1", 3, 25, 5), chunk("j-1", 2, 10, 15)];
    for (const x of [a, b, c]) expect(await logs.insertChunk(x)).toBe(true);
    expect(await logs.insertChunk({ ...chunk("j-1", 9, 10, 99), sha256: "other" })).toBe(false);
    await logs.insertChunk(chunk("j-2", 1, 0, 7));

    const read: LogChunk[] = [];
    for await (const x of logs.chunks("j-1")) read.push(x);
    expect(read.map((x) => ({ ...x, gzip: [...x.gzip] }))).toEqual([a, c, b].map((x) => ({ ...x, gzip: [...x.gzip] })));
    expect(await logs.findChunk("j-1", 10)).toEqual(span(c));
    expect(await logs.findChunk("j-1", 11)).toBeNull();
    expect(await logs.chunkBelow("j-1", 10)).toEqual(span(a));
    expect(await logs.chunkBelow("j-1", 11)).toEqual(span(c));
    expect(await logs.chunkBelow("j-1", 1000)).toEqual(span(b));
    expect(await logs.chunkBelow("j-1", 0)).toBeNull();
    expect(await logs.chunkBelow("j-3", 10)).toBeNull();
    expect(await logs.extent("j-1")).toEqual({ size: 30, deleted: false });
  });

  it("reads a job's chunks from the one holding an offset on", async () => {
    const [a, b, c] = [chunk("j-1", 1, 0, 10), chunk("j-1", 2, 10, 15), chunk("j-1", 3, 25, 5)];
    for (const x of [a, b, c]) await logs.insertChunk(x);
    const from = async (offset: number) => {
      const offsets: number[] = [];
      for await (const x of logs.chunks("j-1", offset)) offsets.push(x.offset);
      return offsets;
    };
    expect(await from(0)).toEqual([0, 10, 25]);
    expect(await from(9)).toEqual([0, 10, 25]);
    expect(await from(10)).toEqual([10, 25]);
    expect(await from(24)).toEqual([10, 25]);
    expect(await from(29)).toEqual([25]);
    // Past the end: the last chunk, which holds nothing from there (the reader trims it).
    expect(await from(1000)).toEqual([25]);
  });

  it("deletes a log, remembering it was deleted, and forgets the logs of jobs that are gone", async () => {
    await logs.insertChunk(chunk("j-1", 1, 0, 10));
    await logs.insertChunk(chunk("j-2", 1, 0, 7));
    await logs.delete("j-1", new Date("2026-03-01T10:00:00.000Z"));
    await logs.delete("j-1", new Date("2026-03-01T11:00:00.000Z"));
    expect(await logs.extent("j-1")).toEqual({ size: 0, deleted: true });
    expect(await logs.deleted("j-1")).toBe(true);
    expect(await logs.deleted("j-2")).toBe(false);

    await logs.removeLogsOf(["j-1", "j-2"]);
    expect(await logs.extent("j-1")).toEqual({ size: 0, deleted: false });
    expect(await logs.extent("j-2")).toEqual({ size: 0, deleted: false });
  });
});
