import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { JobLogChunkStoredSchema } from "@conveyor/proto/builds";
import { createLogger, jobLogSubject } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import type { ChunkNotice } from "./log-assembler.js";
import { createLogFeeds } from "./log-feeds.js";

const notice = (jobId: string, offset: number, size: number, gzip: Uint8Array) =>
  toBinary(JobLogChunkStoredSchema, create(JobLogChunkStoredSchema, { jobId, offset: BigInt(offset), size, gzip }));

describe("the log feeds of one gateway", () => {
  it("passes a chunk's bytes on decompressed, and without them when absent or unreadable (to be read)", async () => {
    const nats = createFakeNats();
    let renders = 0;
    const feeds = createLogFeeds({
      nc: nats.nc,
      logger: createLogger("test", "silent"),
      render: () => `rendered ${++renders}`,
    });
    const got: ChunkNotice[] = [];
    const watch = feeds.watch("j1", { notice: (n) => got.push(n), broke: () => {} });
    await watch.ready;
    const subject = jobLogSubject("j1");
    nats.publish(subject, notice("j1", 0, 6, gzipSync("hello\n")));
    nats.publish(subject, notice("j1", 6, 1_048_576, new Uint8Array()));
    nats.publish(subject, notice("j1", 7, 3, new Uint8Array([1, 2, 3])));
    // gzip of other bytes than the size says.
    nats.publish(subject, notice("j1", 10, 2, gzipSync("three")));
    await waitFor(() => got.length === 4);
    expect(got.map((n) => [n.offset, n.size, n.bytes && Buffer.from(n.bytes).toString()])).toEqual([
      [0, 6, "hello\n"],
      [6, 1_048_576, null],
      [7, 3, null],
      [10, 2, null],
    ]);
    expect(feeds.stats()).toEqual({ jobs: 1, listeners: 1, notices: 4 });
    // The same bytes from the same place render once.
    const bytes = new TextEncoder().encode("a\n");
    expect(watch.render(0, bytes)).toBe("rendered 1");
    expect(watch.render(0, bytes)).toBe("rendered 1");
    expect(watch.render(2, bytes)).toBe("rendered 2");
    watch.stop();
    watch.stop();
    expect(feeds.stats()).toEqual({ jobs: 0, listeners: 0, notices: 4 });
  });

  it("tells its listeners when the subscription broke, and subscribes again", async () => {
    const nats = createFakeNats();
    const feeds = createLogFeeds({ nc: nats.nc, logger: createLogger("test", "silent"), render: () => "" });
    let broke = 0;
    const watch = feeds.watch("j1", { notice: () => {}, broke: () => broke++ });
    nats.fail(jobLogSubject("j1"));
    await waitFor(() => broke === 1 && nats.opened(jobLogSubject("j1")) === 2, 5_000);
    watch.stop();
  });
});
