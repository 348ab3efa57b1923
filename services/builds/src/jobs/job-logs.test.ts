import { gzipSync } from "node:zlib";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService } from "@conveyor/proto/builds";
import { createMemoryBuildsService } from "../testing.js";

// Reading a range of a job's log (StreamJobLog's from_offset and tail_bytes) through the real service on the
// in-memory repositories: only the bytes asked for, each piece with its offset in the log.

async function logOf(text: Buffer, chunkSizes: number[]) {
  const memory = createMemoryBuildsService();
  const { build, jobs } = await memory.seedBuild({ jobs: [{ state: "running" }] });
  const jobId = jobs[0]?.id ?? "";
  let offset = 0;
  for (const [i, size] of chunkSizes.entries()) {
    const bytes = text.subarray(offset, offset + size);
    await memory.repos.logs.insertChunk({ jobId, sequence: i + 1, offset, size, sha256: "", gzip: gzipSync(bytes) });
    offset += size;
  }
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, memory.service)),
  );
  return async (fromOffset: number, tailBytes: number) => {
    const parts: Array<{ offset: number; bytes: Buffer }> = [];
    let size = -1n;
    const req = { pipelineId: build.pipelineId, number: build.number, jobId };
    for await (const message of client.streamJobLog({
      ...req,
      fromOffset: BigInt(fromOffset),
      tailBytes: BigInt(tailBytes),
    })) {
      if (message.part.case === "info") size = message.part.value.size;
      if (message.part.case === "data")
        parts.push({ offset: Number(message.offset), bytes: Buffer.from(message.part.value) });
    }
    // The pieces follow each other without a gap.
    const gaps = parts.filter(
      (p, i) => i > 0 && p.offset !== (parts[i - 1]?.offset ?? 0) + (parts[i - 1]?.bytes.length ?? 0),
    );
    expect(gaps).toEqual([]);
    return { size, offset: parts[0]?.offset, bytes: Buffer.concat(parts.map((p) => p.bytes)) };
  };
}

describe("reading a range of a job's log", () => {
  const text = Buffer.from(Array.from({ length: 30 }, (_, i) => `line ${String(i).padStart(2, "0")}\n`).join(""));

  it("streams from an offset, the tail, or both, reading only the chunks that hold them", async () => {
    const range = await logOf(text, [64, 64, 64, text.length - 192]);
    expect(await range(0, 0)).toEqual({ size: BigInt(text.length), offset: 0, bytes: text });
    // From an offset inside the second chunk: that chunk's rest, then the others.
    expect(await range(100, 0)).toMatchObject({ offset: 100, bytes: text.subarray(100) });
    // The last 50 bytes, whatever chunks hold them.
    expect(await range(0, 50)).toMatchObject({ offset: text.length - 50, bytes: text.subarray(text.length - 50) });
    // The later of the two starts wins.
    expect(await range(text.length - 10, 50)).toMatchObject({ bytes: text.subarray(text.length - 10) });
    expect(await range(0, text.length * 2)).toMatchObject({ offset: 0, bytes: text });
  });

  it("sends the info and no bytes from the end on, and refuses a negative offset or tail", async () => {
    const range = await logOf(text, [100, text.length - 100]);
    expect(await range(text.length, 0)).toEqual({
      size: BigInt(text.length),
      offset: undefined,
      bytes: Buffer.alloc(0),
    });
    expect(await range(text.length + 100, 0)).toMatchObject({ offset: undefined });
    for (const [from, tail] of [
      [-1, 0],
      [0, -1],
    ] as const) {
      const code = await range(from, tail).then(
        () => "ok",
        (err) => ConnectError.from(err).code,
      );
      expect(code).toBe(Code.InvalidArgument);
    }
  });
});
