import { StringValueSchema } from "@bufbuild/protobuf/wkt";
import { createLogger } from "../process/logger.js";
import {
  commitOf,
  MAX_MARKS,
  markedEventKey,
  markedEventResolver,
  markedKeyParts,
  publishThroughEvents,
  UNCOMMITTED_AFTER_MS,
  withMark,
  writeMarked,
} from "./marked-events.js";
import { type EventPublisher, encodeEvent } from "./nats.js";
import { createMemoryOutboxStore, createOutbox, msgIdOf, type RawPublish } from "./outbox.js";

const logger = createLogger("test", "silent");
const text = (data: Uint8Array) => new TextDecoder().decode(data);
const event = (body: string) => ({ subject: "ci.test.thing_changed", data: new TextEncoder().encode(body) });

describe("marked events' rules", () => {
  it("keep a document's latest marks, the new one last", () => {
    expect(withMark(undefined, "a")).toEqual(["a"]);
    const full = Array.from({ length: MAX_MARKS }, (_, i) => `m${i}`);
    expect(withMark(full, "new")).toEqual([...full.slice(1), "new"]);
    expect(withMark(full, "new")).toHaveLength(MAX_MARKS);
  });

  it("name the document and the mark in the key, and read them back", () => {
    expect(markedEventKey("thing-event", "t1", "m1")).toBe("thing-event:t1:m1");
    expect(markedEventKey("thing-event", "t1", "m1", 2)).toBe("thing-event:t1:m1:2");
    expect(markedKeyParts("thing-event:t1:m1:2")).toEqual({ id: "t1", mark: "m1" });
  });

  it.each<[string, string[] | null, number, string]>([
    ["the mark on its document", ["x", "m"], 0, "publish"],
    ["the mark on its document, long after", ["m"], UNCOMMITTED_AFTER_MS * 10, "publish"],
    ["no mark yet, within the wait", ["x"], UNCOMMITTED_AFTER_MS - 1, "wait"],
    ["no document yet, within the wait", null, 1_000, "wait"],
    ["no mark after the wait", ["x"], UNCOMMITTED_AFTER_MS + 1, "drop"],
    ["no document after the wait", null, UNCOMMITTED_AFTER_MS + 1, "drop"],
  ])("an entry with %s: %s", (_name, marks, ageMs, verdict) => {
    const at = new Date(1_000_000);
    expect(commitOf(marks, "m", at, new Date(at.getTime() + ageMs))).toBe(verdict);
  });
});

/** A document store of one kind of document with marks, an outbox over memory, and a stream that de-duplicates. */
function world() {
  let clock = new Date("2026-01-01T00:00:00Z");
  type Thing = { id: string; value: string; eventMarks?: string[] };
  const docs = new Map<string, Thing>();
  const messages: Array<{ subject: string; data: string; msgID: string }> = [];
  const seen = new Set<string>();
  const stream = { down: false };
  const publish: RawPublish = async (subject, data, msgID) => {
    if (stream.down) throw new Error("no responders");
    if (seen.has(msgID)) return;
    seen.add(msgID);
    messages.push({ subject, data: text(data), msgID });
  };
  const now = () => clock;
  const store = createMemoryOutboxStore();
  const outbox = createOutbox({
    store,
    publish,
    logger,
    now,
    graceMs: 3_000,
    resolvers: { "thing-event": markedEventResolver(async (id) => docs.get(id)?.eventMarks, now) },
  });
  /** Sets a thing's value when it is still `from`, announcing it. */
  const change = (id: string, from: string, value: string, written?: (doc: Thing) => string) =>
    writeMarked<Thing>(outbox, {
      marks: docs.get(id)?.eventMarks,
      events: (mark) => [{ key: markedEventKey("thing-event", id, mark), event: event(`${from}->${value}`) }],
      async write(marks) {
        const doc = docs.get(id);
        if (!doc || doc.value !== from) return null;
        const next = { ...doc, value, eventMarks: marks };
        docs.set(id, next);
        return next;
      },
      ...(written ? { written: (doc: Thing) => [event(written(doc))] } : {}),
    });
  const advance = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };
  return { docs, messages, stream, store, outbox, change, advance };
}

describe("a marked write", () => {
  it("records its event, writes the mark with the change, publishes under the entry's msgID and removes it", async () => {
    const w = world();
    w.docs.set("t1", { id: "t1", value: "a" });
    const doc = await w.change("t1", "a", "b");
    expect(doc?.value).toBe("b");
    expect(doc?.eventMarks).toHaveLength(1);
    const mark = doc?.eventMarks?.[0] ?? "";
    expect(w.messages).toEqual([
      { subject: "ci.test.thing_changed", data: "a->b", msgID: expect.stringMatching(`^thing-event:t1:${mark}:`) },
    ]);
    await new Promise((r) => setImmediate(r));
    expect(w.store.docs.size).toBe(0);
  });

  it("that missed records nothing that outlives it and publishes nothing", async () => {
    const w = world();
    w.docs.set("t1", { id: "t1", value: "a" });
    expect(await w.change("t1", "x", "b")).toBeNull();
    expect(w.store.docs.size).toBe(0);
    expect(w.messages).toEqual([]);
  });

  it("publishes the events made from the document as written, under the recorded entries' msgIDs", async () => {
    const w = world();
    w.docs.set("t1", { id: "t1", value: "a" });
    await w.change("t1", "a", "b", (doc) => `as written: ${doc.value}`);
    expect(w.messages.map((m) => m.data)).toEqual(["as written: b"]);
  });

  it("whose publish failed (the process died after its write) is published once by the relay, after the grace", async () => {
    const w = world();
    w.docs.set("t1", { id: "t1", value: "a" });
    w.stream.down = true;
    await w.change("t1", "a", "b");
    expect(w.store.docs.size).toBe(1);
    w.stream.down = false;
    expect(await w.outbox.relay()).toBe(0);
    w.advance(4_000);
    expect(await w.outbox.relay()).toBe(1);
    expect(await w.outbox.relay()).toBe(0);
    const [entry] = w.messages;
    expect(w.messages).toHaveLength(1);
    expect(entry?.data).toBe("a->b");
    expect(w.store.docs.size).toBe(0);
  });

  it("whose write never happened (a crash before it) is waited for, then dropped unpublished", async () => {
    const w = world();
    w.docs.set("t1", { id: "t1", value: "a" });
    const [recorded] = await w.outbox.recordAll([
      { key: markedEventKey("thing-event", "t1", "never"), event: event("a->z") },
    ]);
    w.advance(4_000);
    expect(await w.outbox.relay()).toBe(0);
    expect(w.store.docs.size).toBe(1);
    w.advance(UNCOMMITTED_AFTER_MS);
    expect(await w.outbox.relay()).toBe(0);
    expect(w.store.docs.size).toBe(0);
    expect(w.messages).toEqual([]);
    expect(recorded && msgIdOf(recorded.key, recorded.version)).toMatch(/^thing-event:t1:never:/);
  });
});

describe("publishing through an EventPublisher", () => {
  it("decodes each event with its subject's schema (or the fallback)", async () => {
    const published: Array<{ subject: string; value: unknown }> = [];
    const events: EventPublisher = {
      async publish(subject, _schema, value) {
        published.push({ subject, value });
      },
    };
    const publish = publishThroughEvents(events, { "ci.test.a": StringValueSchema });
    const e = encodeEvent("ci.test.a", StringValueSchema, { value: "hello" });
    await publish(e.subject, e.data, "id");
    expect(published).toEqual([{ subject: "ci.test.a", value: expect.objectContaining({ value: "hello" }) }]);
    await expect(publish("ci.test.b", e.data, "id")).rejects.toThrow(/no schema/);
    await publishThroughEvents(events, {}, StringValueSchema)("ci.test.b", e.data, "id");
    expect(published).toHaveLength(2);
  });
});
