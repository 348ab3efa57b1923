import { createHash, randomBytes, randomUUID } from "node:crypto";
import { gzipSync } from "node:zlib";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { stepMessages } from "@conveyor/runtime";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";
import { type LogLimits, MAX_HEADER_TIMES } from "./job-logs.js";

// Job logs through the Connect client over the real MongoDB-wire server: chunks in (validated, idempotent, in any
// order), the whole log out in order, header times, deletion.
const databases = testDatabases("it_job_logs", { monitorCommands: true });

let client: Client;
/** The same database served with small limits. */
let small: Client;
const SMALL: LogLimits = { maxChunkBytes: 64, maxLogBytes: 256 };

beforeAll(async () => {
  await databases.connect();
  const db = databases.create();
  ({ client } = await openBuildsService(db));
  ({ client: small } = await openBuildsService(db, { logLimits: SMALL }));
});
afterAll(() => databases.close());

interface JobRef {
  pipelineId: string;
  number: number;
  jobId: string;
}

/** A build of one command job, taken as far as `upTo` by agent-1. */
async function jobIn(upTo: "scheduled" | "assigned" | "accepted" | "running" = "running"): Promise<JobRef> {
  const pipeline = create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug: "logs",
    name: "Logs",
    defaultBranch: "main",
    steps: stepMessages([{ type: "script", name: "a", command: "echo a", agent_query_rules: [] }]),
  });
  const { build } = await client.createBuild({ pipeline, commit: "abc", branch: "main" });
  const jobId = build?.jobs[0]?.id ?? "";
  const ref = { pipelineId: pipeline.id, number: build?.number ?? 0, jobId };
  if (upTo === "scheduled") return ref;
  await client.assignJob({ jobId, agent: { id: "agent-1", name: "one" } });
  if (upTo === "assigned") return ref;
  await client.acceptJob({ jobId, agentId: "agent-1" });
  if (upTo === "running") await client.transitionJob({ jobId, event: JobEventType.START });
  return ref;
}

/** A chunk as the agent sends it: `bytes` at `offset`, gzip. */
const chunk = (jobId: string, sequence: number, offset: number, bytes: Buffer, size = bytes.length) => ({
  jobId,
  sequence,
  offset: BigInt(offset),
  size,
  data: gzipSync(bytes),
});

/** Splits `bytes` into pieces of the given sizes, with their offsets. */
function split(bytes: Buffer, sizes: number[]): Array<{ offset: number; bytes: Buffer }> {
  const pieces = [];
  let offset = 0;
  for (const size of sizes) {
    pieces.push({ offset, bytes: bytes.subarray(offset, offset + size) });
    offset += size;
  }
  if (offset !== bytes.length) throw new Error("sizes do not cover the bytes");
  return pieces;
}

/** The streamed log: the kinds of its messages in order, its info, its data messages and all of its bytes. */
async function readLog(c: Client, ref: JobRef) {
  const kinds: string[] = [];
  const data: Buffer[] = [];
  let info: { size: bigint; headerTimes: Record<string, string>; deleted: boolean } | undefined;
  for await (const message of c.streamJobLog(ref)) {
    kinds.push(message.part.case ?? "none");
    if (message.part.case === "info") info = message.part.value;
    if (message.part.case === "data") data.push(Buffer.from(message.part.value));
  }
  return { kinds, info, data, bytes: Buffer.concat(data) };
}

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("job logs", () => {
  it("reassembles chunks sent out of order and retried into exactly the bytes sent, info first", async () => {
    const ref = await jobIn();
    const text = Buffer.from(
      Array.from({ length: 40 }, (_, i) => `~~~ line ${i} \u00e9\u2713 \x1b[32mgreen\x1b[0m\r\n`).join(""),
    );
    const pieces = split(text, [100, 1, 700, text.length - 801]);
    for (const i of [2, 0, 3, 0, 1, 2, 3]) {
      const piece = pieces[i];
      if (piece) await client.appendJobLog(chunk(ref.jobId, i + 1, piece.offset, piece.bytes));
    }
    const log = await readLog(client, ref);
    expect(log.kinds[0]).toBe("info");
    expect(log.kinds.slice(1).every((k) => k === "data")).toBe(true);
    expect(log.info).toMatchObject({ size: BigInt(text.length), headerTimes: {}, deleted: false });
    expect(log.bytes.equals(text)).toBe(true);
  });

  it("round-trips a 10 MB log byte for byte, streaming it a chunk at a time", async () => {
    const ref = await jobIn();
    const chunkSize = 256 * 1024;
    // Log-like lines with random content: compressible, but no two chunks alike.
    const lines: Buffer[] = [];
    let length = 0;
    for (let i = 0; length < 10 * 1024 * 1024; i++) {
      const line = Buffer.from(`${i} ${randomBytes(24).toString("base64")} step output\n`);
      lines.push(line);
      length += line.length;
    }
    const log = Buffer.concat(lines).subarray(0, 10 * 1024 * 1024 + 12_345);
    const offsets = Array.from({ length: Math.ceil(log.length / chunkSize) }, (_, i) => i * chunkSize);
    // The agent uploads in parallel, so chunks arrive in any order: every other one first, four at a time.
    const order = [...offsets.filter((_, i) => i % 2 === 1), ...offsets.filter((_, i) => i % 2 === 0)];
    for (let i = 0; i < order.length; i += 4) {
      await Promise.all(
        order.slice(i, i + 4).map((offset) => {
          const bytes = log.subarray(offset, offset + chunkSize);
          return client.appendJobLog(chunk(ref.jobId, offset / chunkSize + 1, offset, bytes));
        }),
      );
    }
    const read = await readLog(client, ref);
    expect(read.info?.size).toBe(BigInt(log.length));
    expect(read.bytes.length).toBe(log.length);
    expect(sha256(read.bytes)).toBe(sha256(log));
    expect(read.data.length).toBeGreaterThanOrEqual(offsets.length);
    expect(Math.max(...read.data.map((d) => d.length))).toBeLessThanOrEqual(chunkSize);
  });

  it("refuses bad chunks and stores nothing of them", async () => {
    const ref = await jobIn();
    const first = randomBytes(32);
    await small.appendJobLog(chunk(ref.jobId, 1, 0, first));
    const next = randomBytes(64);
    const refusals: Array<[string, ReturnType<typeof chunk>, Code]> = [
      ["gzip of fewer bytes than size", chunk(ref.jobId, 2, 32, next.subarray(0, 63), 64), Code.InvalidArgument],
      ["gzip of more bytes than size", chunk(ref.jobId, 2, 32, next, 40), Code.InvalidArgument],
      ["not gzip", { ...chunk(ref.jobId, 2, 32, next), data: next }, Code.InvalidArgument],
      ["negative offset", chunk(ref.jobId, 2, -64, next), Code.InvalidArgument],
      ["sequence 0", chunk(ref.jobId, 0, 32, next), Code.InvalidArgument],
      ["negative size", chunk(ref.jobId, 2, 32, next, -1), Code.InvalidArgument],
      ["a chunk over the chunk limit", chunk(ref.jobId, 2, 32, randomBytes(65)), Code.InvalidArgument],
      ["a chunk past the log limit", chunk(ref.jobId, 5, 200, next), Code.FailedPrecondition],
      ["another chunk at a stored offset", chunk(ref.jobId, 1, 0, first.subarray(0, 16)), Code.FailedPrecondition],
    ];
    for (const [name, request, code] of refusals) {
      expect([name, await codeOf(small.appendJobLog(request))]).toEqual([name, code]);
    }
    const unknown = await codeOf(client.appendJobLog(chunk(randomUUID(), 1, 0, first)));
    expect(unknown).toBe(Code.NotFound);
    const read = await readLog(client, ref);
    expect(read.info?.size).toBe(32n);
    expect(read.bytes.equals(first)).toBe(true);

    // Up to the log limit exactly is accepted, one byte past it is not.
    const rest = randomBytes(SMALL.maxLogBytes - 32);
    for (const [i, piece] of split(rest, [64, 64, 64, 32]).entries()) {
      await small.appendJobLog(chunk(ref.jobId, i + 2, 32 + piece.offset, piece.bytes));
    }
    expect(await codeOf(small.appendJobLog(chunk(ref.jobId, 6, SMALL.maxLogBytes, Buffer.from("x"))))).toBe(
      Code.FailedPrecondition,
    );
    const full = await readLog(client, ref);
    expect(full.bytes.equals(Buffer.concat([first, rest]))).toBe(true);
  });

  it("takes chunks only while an agent runs the job: none before it accepted, none once it finished", async () => {
    for (const upTo of ["scheduled", "assigned"] as const) {
      const ref = await jobIn(upTo);
      expect([upTo, await codeOf(client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("hi\n"))))]).toEqual([
        upTo,
        Code.FailedPrecondition,
      ]);
      expect((await readLog(client, ref)).info?.size).toBe(0n);
    }
    const accepted = await jobIn("accepted");
    await client.appendJobLog(chunk(accepted.jobId, 1, 0, Buffer.from("preparing\n")));
    await client.transitionJob({ jobId: accepted.jobId, event: JobEventType.START });
    await client.appendJobLog(chunk(accepted.jobId, 2, 10, Buffer.from("done\n")));
    await client.transitionJob({ jobId: accepted.jobId, event: JobEventType.FINISH, exitStatus: 0 });
    // The agent stops its log before it finishes the job: a finished job's log never changes, not even by a chunk
    // already stored sent again.
    for (const late of [
      chunk(accepted.jobId, 2, 10, Buffer.from("done\n")),
      chunk(accepted.jobId, 3, 15, Buffer.from("x")),
    ])
      expect(await codeOf(client.appendJobLog(late))).toBe(Code.FailedPrecondition);
    expect((await readLog(client, accepted)).bytes.toString()).toBe("preparing\ndone\n");
  });

  it("refuses a different chunk of the same size at a stored offset, and chunks overlapping stored ones", async () => {
    const ref = await jobIn();
    await client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("aaaa")));
    expect(await codeOf(client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("bbbb"))))).toBe(
      Code.FailedPrecondition,
    );
    // Overlapping the stored chunk from after it, and reaching into a later one from before it.
    expect(await codeOf(client.appendJobLog(chunk(ref.jobId, 2, 2, Buffer.from("cccc"))))).toBe(
      Code.FailedPrecondition,
    );
    await client.appendJobLog(chunk(ref.jobId, 3, 8, Buffer.from("eeee")));
    expect(await codeOf(client.appendJobLog(chunk(ref.jobId, 2, 4, Buffer.from("ddddd"))))).toBe(
      Code.FailedPrecondition,
    );
    await client.appendJobLog(chunk(ref.jobId, 2, 4, Buffer.from("dddd")));
    // A retry of a stored chunk is still fine.
    await client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("aaaa")));
    const read = await readLog(client, ref);
    expect(read.bytes.toString()).toBe("aaaaddddeeee");
    expect(read.info?.size).toBe(12n);
  });

  it("stores a chunk with one write after three reads taken together (docs/architecture.md#data)", async () => {
    const ref = await jobIn();
    // What the build's creation does after it answered (counters) is done first, and not counted.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const commands: string[] = [];
    const count = (event: { commandName: string; command: Record<string, unknown> }) => {
      const collection = String(event.command[event.commandName] ?? "");
      if (["jobs", "job_log_chunks", "job_log_deletions"].includes(collection))
        commands.push(`${event.commandName} ${collection}`);
    };
    databases.mongo.on("commandStarted", count);
    try {
      await client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("first\n")));
      await client.appendJobLog(chunk(ref.jobId, 2, 6, Buffer.from("second\n")));
    } finally {
      databases.mongo.off("commandStarted", count);
    }
    // Each: the job (is it running?), the log's deletion mark, the stored chunk nearest below its end; then the insert.
    const each = ["find jobs", "find job_log_chunks", "find job_log_deletions", "insert job_log_chunks"];
    expect(commands.sort()).toEqual([...each, ...each].sort());
  });

  it("refuses chunks for a job canceled before any agent accepted it", async () => {
    for (const upTo of ["scheduled", "assigned"] as const) {
      const ref = await jobIn(upTo);
      await client.cancelBuild({ pipelineId: ref.pipelineId, number: ref.number });
      expect([upTo, await codeOf(client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("late\n"))))]).toEqual([
        upTo,
        Code.FailedPrecondition,
      ]);
    }
  });

  it("deletes a log: empty and marked deleted, later chunks refused", async () => {
    const ref = await jobIn();
    await client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("secret\n")));
    expect(await codeOf(client.deleteJobLog({ ...ref, number: ref.number + 1 }))).toBe(Code.NotFound);
    expect((await readLog(client, ref)).info?.size).toBe(7n);
    await client.deleteJobLog(ref);
    const read = await readLog(client, ref);
    expect(read.kinds).toEqual(["info"]);
    expect(read.info).toMatchObject({ size: 0n, deleted: true });
    expect(await codeOf(client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("secret\n"))))).toBe(
      Code.FailedPrecondition,
    );
    expect(await codeOf(client.appendJobLog(chunk(ref.jobId, 2, 7, Buffer.from("more\n"))))).toBe(
      Code.FailedPrecondition,
    );
    expect((await readLog(client, ref)).info).toMatchObject({ size: 0n, deleted: true });
  });

  it("streams a job's log only under its own build", async () => {
    const ref = await jobIn();
    const other = await jobIn();
    await client.appendJobLog(chunk(ref.jobId, 1, 0, Buffer.from("mine\n")));
    const wrong: Array<[string, JobRef]> = [
      ["another pipeline", { ...ref, pipelineId: other.pipelineId, number: other.number }],
      ["another number", { ...ref, number: ref.number + 1 }],
      ["an unknown pipeline", { ...ref, pipelineId: randomUUID() }],
      ["another job", { ...ref, jobId: other.jobId }],
      ["no job", { ...ref, jobId: "" }],
    ];
    for (const [name, request] of wrong) {
      expect([name, await codeOf(readLog(client, request))]).toEqual([name, Code.NotFound]);
    }
    expect((await readLog(client, ref)).bytes.toString()).toBe("mine\n");
  });

  it("merges header times and refuses lines that are not line numbers or times that are not times", async () => {
    const ref = await jobIn();
    const t = (s: number) => `2031-01-01T00:00:0${s}.123456789Z`;
    await client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: { "0": t(0), "3": t(1) } });
    await client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: { "3": t(2), "17": t(3) } });
    const expected = { "0": t(0), "3": t(2), "17": t(3) };
    expect((await readLog(client, ref)).info?.headerTimes).toEqual(expected);

    const bad: Array<Record<string, string>> = [
      { "5": t(4), abc: t(4) },
      { "-1": t(4) },
      { "1.5": t(4) },
      { "6": "not a time" },
    ];
    for (const headerTimes of bad) {
      expect([headerTimes, await codeOf(client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes }))]).toEqual([
        headerTimes,
        Code.InvalidArgument,
      ]);
    }
    expect((await readLog(client, ref)).info?.headerTimes).toEqual(expected);
    expect(await codeOf(client.setJobHeaderTimes({ jobId: randomUUID(), headerTimes: { "1": t(1) } }))).toBe(
      Code.NotFound,
    );
  });

  it("bounds the header times a job holds in all, over every call, and takes none once the job finished", async () => {
    const ref = await jobIn();
    const times = (from: number, count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [String(from + i), "2031-01-01T00:00:00Z"]));
    await client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: times(0, MAX_HEADER_TIMES - 1) });
    // Lines it holds already do not count twice; one new line fits, two do not (and neither is kept).
    await client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: times(0, 10) });
    expect(
      await codeOf(client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: times(MAX_HEADER_TIMES - 1, 2) })),
    ).toBe(Code.InvalidArgument);
    expect(Object.keys((await readLog(client, ref)).info?.headerTimes ?? {})).toHaveLength(MAX_HEADER_TIMES - 1);
    await client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: times(MAX_HEADER_TIMES - 1, 1) });
    expect(Object.keys((await readLog(client, ref)).info?.headerTimes ?? {})).toHaveLength(MAX_HEADER_TIMES);
    await client.transitionJob({ jobId: ref.jobId, event: JobEventType.FINISH, exitStatus: 0 });
    expect(await codeOf(client.setJobHeaderTimes({ jobId: ref.jobId, headerTimes: times(0, 1) }))).toBe(
      Code.FailedPrecondition,
    );
    // Seven writes of documents holding up to 10,000 times: seconds each on FerretDB when the machine is busy.
  }, 120_000);
});
