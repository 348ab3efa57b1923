import { createLogger } from "../process/logger.js";
import { createMemoryOutboxStore, createOutbox, msgIdOf, type OutboxResolver, type RawPublish } from "./outbox.js";

const logger = createLogger("test", "silent");
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

/** A JetStream stand-in: de-duplicates by msgID like the stream does, and fails while `down`. */
function fakeStream() {
  const messages: Array<{ subject: string; data: string; msgID: string }> = [];
  const seen = new Set<string>();
  const stream = {
    down: false,
    attempts: 0,
    messages,
    publish: (async (subject, data, msgID) => {
      stream.attempts++;
      if (stream.down) throw new Error("no responders");
      if (seen.has(msgID)) return;
      seen.add(msgID);
      messages.push({ subject, data: text(data), msgID });
    }) as RawPublish,
  };
  return stream;
}

function setup(resolvers: Record<string, OutboxResolver> = {}) {
  let clock = new Date("2026-01-01T00:00:00Z");
  const store = createMemoryOutboxStore();
  const stream = fakeStream();
  const make = () =>
    createOutbox({
      store,
      publish: stream.publish,
      logger,
      resolvers,
      now: () => clock,
      graceMs: 3_000,
      leaseMs: 10_000,
    });
  const advance = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };
  return { store, stream, outbox: make(), make, advance };
}

const event = { subject: "ci.test.thing_deleted", data: bytes("thing-1") };

describe("the outbox", () => {
  it("publishes a recorded event with its deterministic msgID and removes it once acknowledged", async () => {
    const { store, stream, outbox } = setup();
    const version = await outbox.record("thing_deleted:1", event);
    expect(store.docs.has("thing_deleted:1")).toBe(true);
    expect(await outbox.send("thing_deleted:1", version, event)).toBe(true);
    expect(stream.messages).toEqual([
      { subject: event.subject, data: "thing-1", msgID: msgIdOf("thing_deleted:1", version) },
    ]);
    expect(store.docs.size).toBe(0);
  });

  it("keeps an event whose publish failed, and the relay publishes it after the grace once NATS is back", async () => {
    const { store, stream, outbox, advance } = setup();
    stream.down = true;
    const version = await outbox.record("thing_deleted:1", event);
    expect(await outbox.send("thing_deleted:1", version, event)).toBe(false);
    expect(store.docs.size).toBe(1);

    // Within the grace the writer may still be publishing it: the relay leaves it alone.
    stream.down = false;
    advance(1_000);
    expect(await outbox.relay()).toBe(0);
    advance(3_000);
    expect(await outbox.relay()).toBe(1);
    expect(stream.messages.map((m) => m.msgID)).toEqual([msgIdOf("thing_deleted:1", version)]);
    expect(store.docs.size).toBe(0);
  });

  it("retries a relayed event whose publish failed once its lease lapses", async () => {
    const { store, stream, outbox, advance } = setup();
    stream.down = true;
    await outbox.record("thing_deleted:1", event);
    advance(5_000);
    expect(await outbox.relay()).toBe(0);
    stream.down = false;
    advance(5_000);
    expect(await outbox.relay()).toBe(0); // still leased by the failed attempt
    advance(6_000);
    expect(await outbox.relay()).toBe(1);
    expect(store.docs.size).toBe(0);
  });

  it("lets one replica's relay take an entry: the others skip what it claimed", async () => {
    const { stream, outbox, make, advance } = setup();
    const other = make();
    stream.down = true;
    const version = await outbox.record("thing_deleted:1", event);
    await outbox.send("thing_deleted:1", version, event);
    stream.down = false;
    advance(4_000);
    const [a, b] = await Promise.all([outbox.relay(), other.relay()]);
    expect(a + b).toBe(1);
    expect(stream.attempts).toBe(2); // the failed send and one relay
  });

  it("publishes the same entry twice under one msgID, so the stream keeps it once", async () => {
    const { stream, outbox } = setup();
    const version = await outbox.record("thing_deleted:1", event);
    await outbox.send("thing_deleted:1", version, event);
    await outbox.send("thing_deleted:1", version, event);
    expect(stream.messages).toHaveLength(1);
  });

  it("never reuses a msgID: an entry recorded again after its removal gets a new version", async () => {
    const { stream, outbox } = setup();
    const first = await outbox.record("counts:p", event);
    await outbox.send("counts:p", first, event);
    const second = await outbox.record("counts:p", event);
    await outbox.send("counts:p", second, event);
    expect(second).not.toBe(first);
    expect(stream.messages).toHaveLength(2);
  });

  it("keeps an entry recorded again while its earlier version was being published", async () => {
    const { store, outbox } = setup();
    const first = await outbox.record("counts:p");
    const second = await outbox.record("counts:p");
    await outbox.send("counts:p", first, event);
    expect(store.docs.get("counts:p")?.version).toBe(second);
  });

  it("asks the key's resolver: publishes what it derives, drops what never committed, keeps what may still", async () => {
    const decisions: Record<string, "drop" | "wait" | "publish"> = { "a:1": "publish", "b:1": "drop", "c:1": "wait" };
    const resolver: OutboxResolver = async (entry) => {
      const decision = decisions[entry.key] ?? "wait";
      return decision === "publish" ? { subject: "ci.test.derived", data: bytes(`now ${entry.key}`) } : decision;
    };
    const { store, stream, outbox, advance } = setup({ a: resolver, b: resolver, c: resolver });
    for (const key of Object.keys(decisions)) await outbox.record(key);
    advance(4_000);
    expect(await outbox.relay()).toBe(1);
    expect(stream.messages.map((m) => m.data)).toEqual(["now a:1"]);
    expect([...store.docs.keys()]).toEqual(["c:1"]);
  });

  it("flushes a derived key on demand, and says when there was nothing recorded", async () => {
    const { store, stream, outbox } = setup({ counts: async () => ({ subject: "ci.test.counts", data: bytes("3") }) });
    expect(await outbox.flush("counts:p")).toBe("none");
    await outbox.record("counts:p");
    expect(await outbox.flush("counts:p")).toBe("sent");
    expect(stream.messages.map((m) => m.data)).toEqual(["3"]);
    expect(store.docs.size).toBe(0);
    stream.down = true;
    await outbox.record("counts:p");
    expect(await outbox.flush("counts:p")).toBe("kept");
    expect(store.docs.size).toBe(1);
  });

  describe("recordAll and sendAll (many events of one write)", () => {
    const many = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        key: `job:${i}`,
        event: { subject: "ci.test.job", data: bytes(`job-${i}`) },
      }));

    it("publishes thousands in the order recorded and removes every one", async () => {
      const { store, stream, outbox } = setup();
      const recorded = await outbox.recordAll(many(1_000));
      expect(store.docs.size).toBe(1_000);
      expect(await outbox.sendAll(recorded)).toBe(true);
      expect(stream.messages.map((m) => m.data)).toEqual(recorded.map((_, i) => `job-${i}`));
      await new Promise((resolve) => setImmediate(resolve));
      expect(store.docs.size).toBe(0);
    });

    it("leaves a failed publish and every window after it to the relay, which publishes them once", async () => {
      const { store, stream, outbox, advance } = setup();
      const recorded = await outbox.recordAll(many(600));
      const publish = stream.publish;
      let n = 0;
      // The 300th publish fails (in the second window of 256); the third window is never sent.
      stream.publish = (async (subject, data, msgID) => {
        n++;
        if (n === 300) throw new Error("timeout");
        return publish(subject, data, msgID);
      }) as RawPublish;
      const fresh = createOutbox({ store, publish: (...a) => stream.publish(...a), logger, resolvers: {} });
      expect(await fresh.sendAll(recorded)).toBe(false);
      expect(stream.messages).toHaveLength(511);
      await new Promise((resolve) => setImmediate(resolve));
      expect([...store.docs.keys()].sort()).toEqual([recorded[299], ...recorded.slice(512)].map((e) => e?.key).sort());
      stream.publish = publish;
      advance(5_000);
      for (let pass = 0; pass < 2; pass++) await outbox.relay();
      expect(stream.messages).toHaveLength(600);
      expect(new Set(stream.messages.map((m) => m.msgID)).size).toBe(600);
      expect(store.docs.size).toBe(0);
    });
  });

  it("drains a backlog of many batches in one go once started, not a batch per interval", async () => {
    const store = createMemoryOutboxStore();
    const stream = fakeStream();
    stream.down = true;
    const outbox = createOutbox({ store, publish: stream.publish, logger, resolvers: {}, graceMs: 0, batch: 100 });
    const recorded = await outbox.recordAll(
      Array.from({ length: 350 }, (_, i) => ({ key: `k:${i}`, event: { subject: "ci.test.x", data: bytes(`${i}`) } })),
    );
    expect(await outbox.sendAll(recorded)).toBe(false);
    stream.down = false;
    // One tick of a long interval: every batch is relayed by it.
    const stop = outbox.start(250);
    await new Promise((resolve) => setTimeout(resolve, 450));
    stop();
    expect(stream.messages).toHaveLength(350);
    expect(store.docs.size).toBe(0);
  });
});
