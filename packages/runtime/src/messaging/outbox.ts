/**
 * A transactional outbox for domain events whose loss has a consequence (a consumer changes state from them).
 *
 * Why this shape: FerretDB has no multi-document transactions, so an event cannot be written "together with" the
 * state change unless it lives in the very document the write changes. Embedding does not fit our writes (a
 * pipeline deletion deletes its document; counters follow job documents that several writes touch), so each
 * service keeps one `outbox` collection and records the pending event BEFORE the state change, one small upsert:
 *
 *   record(key, event?) → state change → publish(subject, data, msgID = `${key}:${version}`) → remove(key, version)
 *
 * - The API answers only after the record is durable, so an acknowledged write always has its event on disk.
 * - JetStream de-duplicates by msgID (Nats-Msg-Id) within the stream's duplicate window and consumers are
 *   idempotent, so publishing the same entry again (the relay, another replica) is harmless.
 * - Every record gives the entry a new random `version` (so a msgID is never reused for a different record, even
 *   after the entry was removed and recorded again); removal is conditioned on it, so a record made while a
 *   publish was under way survives that publish.
 * - A relay in every process republishes entries older than a grace (`graceMs`), each claimed with a lease (a
 *   compare-and-set on `leaseUntil`) so replicas do not all publish it. Because the record precedes the write, the
 *   relay asks the entry's resolver whether the write committed ("did the pipeline go?") before publishing, and
 *   drops entries whose write never happened. For derived events (a pipeline's counters) the resolver recomputes
 *   the event from the database at publish time, so the entry only says "this key is dirty".
 * Cost with NATS up: one small upsert before the write (none for a pipeline's counters while its entry already
 * stands), then the publish every write made anyway, then a delete by _id after the ack (in the background for
 * counters; a pipeline deletion, which is rare, waits for it).
 */
import { randomUUID } from "node:crypto";
import { Binary, type Collection } from "mongodb";
import type { Logger } from "pino";

/** A pending event: one document per key. `data` is absent for events the resolver derives at publish time. */
export interface OutboxDoc {
  _id: string;
  version: string;
  /** When it was last recorded; the relay leaves it alone for a grace after that. */
  at: Date;
  leaseUntil: Date;
  subject?: string;
  data?: Binary;
}

export interface OutboxEvent {
  subject: string;
  data: Uint8Array;
}

export interface OutboxEntry {
  key: string;
  version: string;
  at: Date;
  event?: OutboxEvent;
}

/** What the relay does with a due entry: publish this event, drop it (its write never committed), or wait. */
export type Resolution = OutboxEvent | "drop" | "wait";

/** Decides per due entry; chosen by the key's prefix (the part before the first ":"). */
export type OutboxResolver = (entry: OutboxEntry) => Promise<Resolution>;

/** Storage of the outbox; the MongoDB one below, an in-memory one in tests. */
export interface OutboxStore {
  /** Upserts the key's entry with a new version. */
  record(key: string, version: string, at: Date, event?: OutboxEvent): Promise<void>;
  get(key: string): Promise<OutboxEntry | null>;
  /** Removes the entry only while it is still at `version`. */
  remove(key: string, version: string): Promise<void>;
  /** Upserts several entries in one command (record each). */
  recordMany(entries: ReadonlyArray<{ key: string; version: string; at: Date; event: OutboxEvent }>): Promise<void>;
  /** Removes several entries in one command, each only while still at its version. */
  removeMany(entries: ReadonlyArray<{ key: string; version: string }>): Promise<void>;
  /** Entries recorded before `before` whose lease lapsed by `now`, oldest first. */
  due(before: Date, now: Date, limit: number): Promise<OutboxEntry[]>;
  /** Takes the lease of an entry still at `version` and not leased at `now`; false when someone else has it. */
  claim(key: string, version: string, now: Date, until: Date): Promise<boolean>;
}

/** Publishes one message with a de-duplication id (`js.publish(subject, data, { msgID })`); throws on failure. */
export type RawPublish = (subject: string, data: Uint8Array, msgID: string) => Promise<void>;

export interface OutboxOptions {
  store: OutboxStore;
  publish: RawPublish;
  logger: Logger;
  resolvers: Record<string, OutboxResolver>;
  now?: () => Date;
  /** How long after its last record an entry is left to the writer before the relay takes it. */
  graceMs?: number;
  /** How long a relay's claim on an entry lasts. */
  leaseMs?: number;
  /** The most entries one relay pass handles. */
  batch?: number;
}

/** How many entries one of `removeMany`'s deletes names. */
const REMOVE_GROUP = 200;

/** How many of `sendAll`'s publishes wait for their acknowledgements at once. */
const SEND_WINDOW = 256;

/** The JetStream message id of an entry's publish: its key and version, so that a second publish is de-duplicated. */
export const msgIdOf = (key: string, version: string) => `${key}:${version}`;

const prefixOf = (key: string) => key.slice(0, Math.max(0, key.indexOf(":")));

/** Creates the outbox over its store and publisher (see the module doc above for why and how). */
export function createOutbox(opts: OutboxOptions) {
  const { store, publish, logger, resolvers } = opts;
  const now = opts.now ?? (() => new Date());
  const graceMs = opts.graceMs ?? 3_000;
  const leaseMs = opts.leaseMs ?? 15_000;
  const batch = opts.batch ?? 100;

  /** Publishes and removes; false (logged) when the publish failed and the entry stays for the relay. */
  const send = async (key: string, version: string, event: OutboxEvent): Promise<boolean> => {
    try {
      await publish(event.subject, event.data, msgIdOf(key, version));
    } catch (err) {
      logger.warn({ err, subject: event.subject, key }, "event publish failed; the outbox keeps it");
      return false;
    }
    await store.remove(key, version).catch((err) => logger.warn({ err, key }, "outbox entry not removed"));
    return true;
  };

  const resolve = (entry: OutboxEntry): Promise<Resolution> => {
    const resolver = resolvers[prefixOf(entry.key)];
    if (resolver) return resolver(entry);
    return Promise.resolve(entry.event ?? "drop");
  };

  /** One relay pass: claims due entries and publishes or drops them; how many were due and how many published. */
  const relayPass = async (): Promise<{ due: number; published: number }> => {
    const at = now();
    let published = 0;
    const due = await store.due(new Date(at.getTime() - graceMs), at, batch);
    for (const entry of due) {
      if (!(await store.claim(entry.key, entry.version, at, new Date(at.getTime() + leaseMs)))) continue;
      try {
        const resolution = await resolve(entry);
        if (resolution === "drop") await store.remove(entry.key, entry.version);
        else if (resolution !== "wait" && (await send(entry.key, entry.version, resolution))) published++;
      } catch (err) {
        logger.warn({ err, key: entry.key }, "outbox entry not relayed");
      }
    }
    return { due: due.length, published };
  };
  /** One relay pass; returns how many were published. */
  const relay = async (): Promise<number> => (await relayPass()).published;

  return {
    /** Makes an event (or, without one, a derived key) durable before the write; returns its version. */
    async record(key: string, event?: OutboxEvent): Promise<string> {
      const version = randomUUID();
      await store.record(key, version, now(), event);
      return version;
    },
    /**
     * Makes several events durable in one write before the write they announce (each under its own key); returns
     * the recorded entries, to hand to `sendAll` once the write committed or to `discardAll` when it did not.
     */
    async recordAll(items: ReadonlyArray<{ key: string; event: OutboxEvent }>): Promise<RecordedEvent[]> {
      const at = now();
      const entries = items.map(({ key, event }) => ({ key, version: randomUUID(), at, event }));
      if (entries.length > 0) await store.recordMany(entries);
      return entries;
    },
    /**
     * Publishes recorded events in order, each with its entry's msgID, up to SEND_WINDOW at a time (a connection
     * keeps the order they are sent in; waiting for each acknowledgement before the next made a build of 4,000 jobs
     * take seconds); removes the published ones in one command, in the background (an entry left behind is published
     * again by the relay under the same msgID, which JetStream drops within its duplicate window). After a window
     * with a failed publish no more are sent: the failed ones and the rest stay for the relay. Resolves to whether
     * every one was published.
     */
    async sendAll(entries: readonly RecordedEvent[]): Promise<boolean> {
      const sent: RecordedEvent[] = [];
      let all = true;
      for (let from = 0; from < entries.length && all; from += SEND_WINDOW) {
        const window = entries.slice(from, from + SEND_WINDOW);
        const results = await Promise.allSettled(
          window.map((entry) => publish(entry.event.subject, entry.event.data, msgIdOf(entry.key, entry.version))),
        );
        for (const [i, result] of results.entries()) {
          const entry = window[i] as RecordedEvent;
          if (result.status === "fulfilled") sent.push(entry);
          else {
            if (all)
              logger.warn(
                { err: result.reason, subject: entry.event.subject, key: entry.key },
                "event publish failed; the outbox keeps it",
              );
            all = false;
          }
        }
      }
      if (sent.length > 0)
        store.removeMany(sent).catch((err) => logger.warn({ err, count: sent.length }, "outbox entries not removed"));
      return all;
    },
    /** Forgets recorded events whose write did not happen. */
    discardAll: (entries: readonly RecordedEvent[]) =>
      entries.length > 0 ? store.removeMany(entries) : Promise.resolve(),
    /** Publishes an event that was never recorded (a periodic re-announcement), with a fresh msgID. */
    publishUnrecorded: (event: OutboxEvent) => publish(event.subject, event.data, randomUUID()),
    /** Forgets an entry whose write did not happen. */
    discard: (key: string, version: string) => store.remove(key, version),
    /** Publishes a recorded event after its write committed; a failure leaves it to the relay. */
    send,
    /** Resolves and publishes the key's current entry now (derived events): "none" when there was none. */
    async flush(key: string): Promise<"none" | "sent" | "kept" | "dropped"> {
      const entry = await store.get(key);
      if (!entry) return "none";
      const resolution = await resolve(entry);
      if (resolution === "wait") return "kept";
      if (resolution === "drop") {
        await store.remove(key, entry.version);
        return "dropped";
      }
      return (await send(key, entry.version, resolution)) ? "sent" : "kept";
    },
    relay,
    /**
     * Runs the relay every `everyMs` until the returned function is called; a pass that found a whole batch due is
     * followed at once by another (a backlog left by a long NATS outage drains at the publish rate, not a batch per
     * interval), as long as each publishes something.
     */
    start(everyMs = 2_000): () => void {
      let running = false;
      let stopped = false;
      const drain = async () => {
        for (;;) {
          const pass = await relayPass();
          if (stopped || pass.due < batch || pass.published === 0) return;
        }
      };
      const timer = setInterval(() => {
        if (running) return;
        running = true;
        drain()
          .catch((err) => logger.warn({ err }, "outbox relay failed"))
          .finally(() => {
            running = false;
          });
      }, everyMs);
      timer.unref();
      return () => {
        stopped = true;
        clearInterval(timer);
      };
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;

/** An event recorded by `recordAll`, with the entry that holds it. */
export interface RecordedEvent {
  key: string;
  version: string;
  at: Date;
  event: OutboxEvent;
}

const toEntry = (doc: OutboxDoc): OutboxEntry => ({
  key: doc._id,
  version: doc.version,
  at: doc.at,
  ...(doc.subject && doc.data
    ? { event: { subject: doc.subject, data: doc.data.buffer.subarray(0, doc.data.position) } }
    : {}),
});

/**
 * The indexes of the documents an unordered insert refused as duplicate keys; undefined when it failed otherwise
 * (then nothing is known of what it stored, and the caller's error stands).
 */
function duplicateIndexes(err: unknown): number[] | undefined {
  const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  if (list.length === 0) return undefined;
  const indexes: number[] = [];
  for (const e of list as Array<{ code?: number; index?: number }>) {
    if (e.code !== 11000 || typeof e.index !== "number") return undefined;
    indexes.push(e.index);
  }
  return indexes;
}

/** The MongoDB outbox: one collection per service database (`outbox` by default), indexed by age. */
export async function createMongoOutboxStore(collection: Collection<OutboxDoc>): Promise<OutboxStore> {
  await collection.createIndex({ at: 1 }, { name: "outbox_age" });
  const record: OutboxStore["record"] = async (key, version, at, event) => {
    await collection.updateOne(
      { _id: key },
      {
        $set: { version, at, ...(event ? { subject: event.subject, data: new Binary(event.data) } : {}) },
        $setOnInsert: { leaseUntil: new Date(0) },
      },
      { upsert: true },
    );
  };
  return {
    record,
    async recordMany(entries) {
      // The keys are new (each holds a fresh mark): one insert of them all, far cheaper than as many upserts. A key
      // that stands already (never expected) is recorded again by an upsert, as `record` does.
      try {
        await collection.insertMany(
          entries.map(
            ({ key, version, at, event }): OutboxDoc => ({
              _id: key,
              version,
              at,
              leaseUntil: new Date(0),
              subject: event.subject,
              data: new Binary(event.data),
            }),
          ),
          { ordered: false },
        );
      } catch (err) {
        const failed = duplicateIndexes(err);
        if (!failed) throw err;
        for (const i of failed) {
          const entry = entries[i];
          if (entry) await record(entry.key, entry.version, entry.at, entry.event);
        }
      }
    },
    async removeMany(entries) {
      if (entries.length === 1) {
        const [only] = entries;
        if (only) await collection.deleteOne({ _id: only.key, version: only.version });
        return;
      }
      // Each version is a random UUID of its own entry: an entry recorded again since has another, and stays. A few
      // hundred at a time: FerretDB checks each document it finds against the whole $in list.
      for (let i = 0; i < entries.length; i += REMOVE_GROUP) {
        const part = entries.slice(i, i + REMOVE_GROUP);
        await collection.deleteMany({
          _id: { $in: part.map((e) => e.key) },
          version: { $in: part.map((e) => e.version) },
        });
      }
    },
    async get(key) {
      const doc = await collection.findOne({ _id: key });
      return doc ? toEntry(doc) : null;
    },
    async remove(key, version) {
      await collection.deleteOne({ _id: key, version });
    },
    async due(before, now, limit) {
      const docs = await collection
        .find({ at: { $lt: before }, leaseUntil: { $lte: now } })
        .sort({ at: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toEntry);
    },
    async claim(key, version, now, until) {
      const res = await collection.updateOne(
        { _id: key, version, leaseUntil: { $lte: now } },
        { $set: { leaseUntil: until } },
      );
      return res.modifiedCount === 1;
    },
  };
}

/** An in-memory store with the same semantics, for unit tests. */
export function createMemoryOutboxStore(): OutboxStore & { docs: Map<string, OutboxDoc> } {
  const docs = new Map<string, OutboxDoc>();
  return {
    docs,
    async record(key, version, at, event) {
      const prev = docs.get(key);
      docs.set(key, {
        _id: key,
        version,
        at,
        leaseUntil: prev?.leaseUntil ?? new Date(0),
        ...(event
          ? { subject: event.subject, data: new Binary(event.data) }
          : { subject: prev?.subject, data: prev?.data }),
      });
    },
    async get(key) {
      const doc = docs.get(key);
      return doc ? toEntry(doc) : null;
    },
    async remove(key, version) {
      if (docs.get(key)?.version === version) docs.delete(key);
    },
    async recordMany(entries) {
      for (const { key, version, at, event } of entries) await this.record(key, version, at, event);
    },
    async removeMany(entries) {
      for (const { key, version } of entries) await this.remove(key, version);
    },
    async due(before, now, limit) {
      return [...docs.values()]
        .filter((d) => d.at < before && d.leaseUntil <= now)
        .sort((a, b) => a.at.getTime() - b.at.getTime())
        .slice(0, limit)
        .map(toEntry);
    },
    async claim(key, version, now, until) {
      const doc = docs.get(key);
      if (!doc || doc.version !== version || doc.leaseUntil > now) return false;
      doc.leaseUntil = until;
      return true;
    },
  };
}
