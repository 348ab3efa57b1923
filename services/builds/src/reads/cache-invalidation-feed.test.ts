// The cache invalidation feed over a fake stream and an in-memory backlog, with the failures NATS and the database
// can cause injected: a reader that throws, a status stream that ends, a publish that rejects. Each must leave the
// read cache empty (nothing it kept can be proved current any more), and the feed must go on.
import type { Logger } from "@conveyor/runtime";
import type { Build } from "../domain/build.js";
import type { BuildRepository } from "../store/build-repository.js";
import { createMemoryInvalidationBacklog } from "../store/memory-invalidation-backlog-repository.js";
import { aBuild } from "../test-support.js";
import { type InvalidationFeed, startInvalidationFeed } from "./cache-invalidation-feed.js";
import { withInvalidations } from "./invalidating-repository.js";
import type { InvalidationStream, StreamMessage } from "./invalidation-stream.js";
import { createReadCache, type Invalidation } from "./read-cache.js";

/** An async source the test feeds, breaks (an item that is an Error is thrown) or ends. */
function channel<T>() {
  const queue: Array<T | Error | "end"> = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const put = (item: T | Error | "end") => {
    queue.push(item);
    wake?.();
  };
  async function* items(): AsyncGenerator<T> {
    while (!closed) {
      const next = queue.shift();
      if (next === "end") return;
      if (next instanceof Error) throw next;
      if (next !== undefined) yield next;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  const close = () => {
    closed = true;
    wake?.();
  };
  return { source: { items: items(), close }, put };
}

/** A stream of invalidations held in memory: what is published is delivered to the reader open at the time. */
function fakeStream() {
  let last = 0;
  const readFrom: number[] = [];
  let reader: ReturnType<typeof channel<StreamMessage>> | undefined;
  let status: ReturnType<typeof channel<{ type: string }>> | undefined;
  let statusOpened = 0;
  const failing: { publish?: Error; readFrom?: Error } = {};
  /** Messages published but not yet delivered to the reader, while delivery is held (a reader behind). */
  let held: StreamMessage[] | undefined;
  const stream: InvalidationStream = {
    lastSequence: async () => last,
    async readFrom(seq) {
      if (failing.readFrom) throw failing.readFrom;
      readFrom.push(seq);
      reader = channel<StreamMessage>();
      return reader.source;
    },
    async publish(data) {
      if (failing.publish) throw failing.publish;
      last++;
      if (held) held.push({ seq: last, data });
      else reader?.put({ seq: last, data });
    },
    status() {
      statusOpened++;
      status = channel<{ type: string }>();
      return status.source;
    },
  };
  return {
    stream,
    failing,
    readFrom,
    statusOpened: () => statusOpened,
    /** Another replica's invalidation, published to the stream. */
    othersPublish: (t: Invalidation) => stream.publish(new TextEncoder().encode(JSON.stringify(t))),
    breakReader: (err: Error) => reader?.put(err),
    /** Holds delivery to the reader (it falls behind the stream's end) until `release`. */
    hold: () => {
      held ??= [];
    },
    release: () => {
      for (const m of held ?? []) reader?.put(m);
      held = undefined;
    },
    status: (item: { type: string } | "end") => status?.put(item),
  };
}

/** A logger that keeps what was logged at warn and error. */
function recordingLogger() {
  const logged: Array<{ level: string; msg: string }> = [];
  const at = (level: string) => (_obj: unknown, msg?: string) => {
    logged.push({ level, msg: msg ?? "" });
  };
  const logger = { debug: () => {}, info: () => {}, warn: at("warn"), error: at("error"), fatal: at("fatal") };
  return { logger: logger as unknown as Logger, logged };
}

const until = async (done: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 300; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
};

const ofBuild = (b: Build): Invalidation => ({
  builds: [b.id],
  pipelines: [b.pipelineId],
  organizations: [b.organizationId],
});

const feeds: InvalidationFeed[] = [];
async function setup(opts: { barrierTimeoutMs?: number; readerStallMs?: number } = {}) {
  const fake = fakeStream();
  const backlog = createMemoryInvalidationBacklog();
  const cache = createReadCache();
  const { logger, logged } = recordingLogger();
  let ids = 0;
  const feed = await startInvalidationFeed({
    stream: fake.stream,
    backlog,
    cache,
    logger,
    newId: () => `entry-${++ids}`,
    barrierTimeoutMs: opts.barrierTimeoutMs ?? 1_000,
    ...(opts.readerStallMs !== undefined ? { readerStallMs: opts.readerStallMs } : {}),
    reopenBackoffMs: 5,
  });
  feeds.push(feed);
  const build = aBuild();
  /** Keeps `build` as a read would, and says whether it is kept. */
  const keep = () => cache.keepBuild(cache.ticket(), build);
  const kept = () => cache.byId(build.id) !== undefined;
  return { fake, backlog, cache, feed, logger, logged, build, keep, kept };
}
afterEach(async () => {
  await Promise.all(feeds.splice(0).map((f) => f.stop()));
});

describe("the cache invalidation feed", () => {
  it("applies what other replicas publish, and lets a read trust the cache once it has applied the stream's end", async () => {
    const s = await setup();
    s.keep();
    expect(await s.feed.barrier()).toBe(true);
    expect(s.kept()).toBe(true);
    await s.fake.othersPublish(ofBuild(s.build));
    expect(await s.feed.barrier()).toBe(true);
    expect(s.kept()).toBe(false);
  });

  it("drops the cache when its reader throws, reads the database meanwhile, and reads on from the stream's end", async () => {
    const s = await setup();
    expect(s.fake.readFrom).toEqual([1]);
    await s.fake.othersPublish({ builds: ["other"], pipelines: [], organizations: [] });
    s.keep();
    // The reader breaks, and cannot be opened again for a while: nothing kept can be trusted meanwhile.
    s.fake.failing.readFrom = new Error("stream not found");
    s.fake.breakReader(new Error("consumer deleted"));
    await until(() => !s.kept(), "the cache to be dropped");
    expect(await s.feed.barrier()).toBe(false);
    delete s.fake.failing.readFrom;
    // Opened again after the break, from the sequence after the stream's end (1 was applied before it broke).
    await until(() => s.fake.readFrom.length === 2, "the reader to be opened again");
    expect(s.fake.readFrom[1]).toBe(2);
    expect(await s.feed.barrier()).toBe(true);
    // It goes on: what is published now is applied.
    s.keep();
    await s.fake.othersPublish(ofBuild(s.build));
    expect(await s.feed.barrier()).toBe(true);
    expect(s.kept()).toBe(false);
  });

  it("drops the cache when the status stream ends, watches it again, and sends reads to the database while disconnected", async () => {
    const s = await setup();
    s.keep();
    s.fake.status("end");
    await until(() => !s.kept(), "the cache to be dropped");
    await until(() => s.fake.statusOpened() === 2, "the status to be watched again");
    // The new watch sees a disconnection: reads go to the database until the connection is back.
    s.fake.status({ type: "disconnect" });
    await until(async () => !(await s.feed.barrier()), "reads to go to the database");
    s.fake.status({ type: "reconnect" });
    await until(() => s.feed.barrier(), "reads to trust the cache again");
  });

  it("keeps an invalidation the stream refused in the backlog, and reads go to the database until the relay sends it", async () => {
    const s = await setup();
    s.keep();
    s.fake.failing.publish = new Error("no responders");
    await s.feed.publish(ofBuild(s.build));
    expect(s.kept()).toBe(false);
    expect(s.backlog.entries.size).toBe(1);
    expect(s.logged).toContainEqual({ level: "warn", msg: "invalidation not published; kept in the backlog" });
    expect(await s.feed.barrier()).toBe(false);
    delete s.fake.failing.publish;
    await s.feed.relay({ force: true });
    expect(s.backlog.entries.size).toBe(0);
    await new Promise((r) => setTimeout(r, 60)); // a look at the backlog stands for 50 ms
    expect(await s.feed.barrier()).toBe(true);
  });

  it("logs a failed write whose invalidation could not be published, with the cache dropped, and goes on", async () => {
    const s = await setup();
    let fail = true;
    const inner = {
      async updateBuild() {
        if (fail) throw new Error("write failed");
        return s.build;
      },
    } as unknown as BuildRepository;
    const repo = withInvalidations(inner, s.feed.publish, s.logger);
    s.keep();
    // Neither the stream nor the backlog takes the invalidation.
    s.fake.failing.publish = new Error("no responders");
    s.backlog.failing.add = new Error("database down");
    await expect(repo.updateBuild(s.build.id, 1, { state: "running" })).rejects.toThrow("write failed");
    expect(s.kept()).toBe(false);
    expect(s.logged).toContainEqual({
      level: "error",
      msg: "a failed write's invalidation was not published: other replicas may serve what it changed",
    });
    // Once NATS takes invalidations again, the next write's goes out.
    delete s.fake.failing.publish;
    delete s.backlog.failing.add;
    fail = false;
    s.keep();
    await repo.updateBuild(s.build.id, 1, { state: "running" });
    expect(s.kept()).toBe(false);
    expect(await s.feed.barrier()).toBe(true);
  });

  it("sends a read to the database when the reader stays behind past the timeout, and warns once with how far behind", async () => {
    const s = await setup({ barrierTimeoutMs: 30 });
    s.fake.hold();
    await s.fake.othersPublish(ofBuild(s.build));
    await s.fake.othersPublish(ofBuild(s.build));
    expect(await s.feed.barrier()).toBe(false);
    expect(await s.feed.barrier()).toBe(false);
    expect(s.feed.stats()).toEqual({ barrierTimeouts: 2, applied: 0 });
    // Rate-limited: one warning for both.
    expect(s.logged.filter((l) => l.level === "warn" && l.msg.includes("barrier timeout"))).toHaveLength(1);
    s.fake.release();
    await until(() => s.feed.stats().applied === 2, "the reader to catch up");
    expect(await s.feed.barrier()).toBe(true);
  });

  it("opens the reader again when it delivers nothing while reads wait on it, and trusts the cache from the stream's end", async () => {
    const s = await setup({ barrierTimeoutMs: 30, readerStallMs: 80 });
    s.keep();
    s.fake.hold();
    await s.fake.othersPublish(ofBuild(s.build));
    // Reads that wait in vain, until the reader has been stalled for longer than allowed.
    await until(async () => {
      await s.feed.barrier();
      return s.fake.readFrom.length === 2;
    }, "the reader to be reopened");
    expect(s.logged.some((l) => l.level === "warn" && l.msg.includes("delivered nothing"))).toBe(true);
    // What it missed is unknown: the cache was dropped, and reads trust it again from the stream's end.
    expect(s.kept()).toBe(false);
    await until(() => s.feed.barrier(), "reads to trust the cache again");
    expect(s.feed.stats().applied).toBe(1);
  });

  it("does not open a reader again that is slow but moving", async () => {
    const s = await setup({ barrierTimeoutMs: 30, readerStallMs: 80 });
    s.fake.hold();
    for (let i = 0; i < 6; i++) {
      await s.fake.othersPublish(ofBuild(s.build));
      expect(await s.feed.barrier()).toBe(false);
      // Delivered late, but delivered: the reader moves between the reads.
      s.fake.release();
      await until(() => s.feed.barrier(), "the late invalidation to be applied");
      s.fake.hold();
    }
    expect(s.fake.readFrom).toHaveLength(1);
  });
});
