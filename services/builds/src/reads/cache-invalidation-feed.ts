/**
 * How every replica of the builds service learns what the others changed, fast enough to serve reads from memory
 * and never older than a change its caller saw acknowledged.
 *
 * - A write is acknowledged only after its touch (touch the build and its scopes, read-cache.ts) is in the JetStream
 *   stream CI_BUILD_TOUCHES, or, when NATS cannot take it, in the database's backlog (which a relay publishes later)
 *   and BACKLOG_ACK_DELAY_MS have passed.
 * - Touches of writes that finish while one is being published go together as one message (group commit).
 * - Every replica applies the stream in order (an ordered consumer) and remembers the last sequence applied.
 * - A read first asks the stream for its last sequence (one round trip, shared by every read waiting at that
 *   moment) and uses a look at the backlog begun at most BACKLOG_LOOK_MS ago, then waits until it has applied up to
 *   that sequence. Any touch acknowledged before the read began is then applied. With a backlog entry, an error, or
 *   a wait past BARRIER_TIMEOUT_MS, the read goes to the database.
 * - A gap in the sequence (touches expired before they were applied), a lost connection or a stream started again
 *   drop everything kept.
 */

import { createGroupCommit } from "@conveyor/runtime";
import { DeliverPolicy, type JetStreamClient, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Collection } from "mongodb";
import type { Logger } from "pino";
import { type Invalidation, mergeInvalidations, type ReadCache } from "./read-cache.js";

export const INVALIDATION_STREAM = "CI_BUILD_TOUCHES";
export const INVALIDATION_SUBJECT = "touches.builds";
/** Touches are needed only until every replica has applied them; a replica further behind drops its cache. */
const INVALIDATION_MAX_AGE_NS = 120 * 1_000_000_000;
/** The most touches published as one message (a merged touch of 100 creates is about 12 KB). */
const INVALIDATIONS_PER_MESSAGE = 100;
/** How long a touch's publish waits for JetStream before it goes to the backlog instead. */
const INVALIDATION_PUBLISH_TIMEOUT_MS = 1_000;
/**
 * How long a read waits for the stream's last sequence or a look at the backlog: with NATS or the database gone the
 * read goes to the database at once rather than after the clients' own timeouts (5 s each).
 */
const BARRIER_QUERY_TIMEOUT_MS = 500;
/** How long a read waits for the touches before it reads the database instead (unless told otherwise). */
const BARRIER_TIMEOUT_MS = 250;
/**
 * How long a look at the backlog stands for reads. A write whose touch went to the backlog is acknowledged only
 * BACKLOG_ACK_DELAY_MS after, twice as long: any read that begins after that acknowledgement uses a look begun
 * after the entry was stored, so it sees the entry (and reads the database), while reads cost the database nothing.
 */
const BACKLOG_LOOK_MS = 50;
const BACKLOG_ACK_DELAY_MS = 2 * BACKLOG_LOOK_MS;
/** How often a relay looks for backlog entries it did not write itself (those of a process that died). */
const FOREIGN_BACKLOG_MS = 15_000;

/** Makes changes known to every replica, and tells a read when what is kept may be served. */
export interface InvalidationFeed {
  /** Resolves once the touch is durable (in the stream or the backlog): only then may its write be acknowledged. */
  publish(t: Invalidation): Promise<void>;
  /** True once every touch acknowledged before the call is applied here; false: read the database. */
  barrier(): Promise<boolean>;
  /**
   * Publishes backlog entries (the relay, on a timer): at once when this process put some there, else only every
   * `everyMs` (entries a process left when it died), unless `force`.
   */
  relay(opts?: { force?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

/** A touch not yet in the stream. */
export interface InvalidationBacklogDoc {
  _id: string;
  touch: Invalidation;
  at: Date;
}

/** `work`, or a rejection once `ms` have passed. */
function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encodeTouch = (t: Invalidation) => encoder.encode(JSON.stringify(t));
const decodeTouch = (data: Uint8Array): Invalidation | null => {
  try {
    const t = JSON.parse(decoder.decode(data)) as Invalidation;
    return Array.isArray(t.builds) && Array.isArray(t.pipelines) && Array.isArray(t.organizations) ? t : null;
  } catch {
    return null;
  }
};

/** Starts applying the touch stream to `cache` (creating the stream when missing). */
export async function startInvalidationFeed(opts: {
  nc: NatsConnection;
  js: JetStreamClient;
  backlog: Collection<InvalidationBacklogDoc>;
  cache: ReadCache;
  logger: Logger;
  newId: () => string;
  /** How long a read waits for touches before it reads the database (default BARRIER_TIMEOUT_MS). */
  barrierTimeoutMs?: number;
}): Promise<InvalidationFeed> {
  const { nc, js, backlog, cache, logger } = opts;
  const barrierTimeoutMs = opts.barrierTimeoutMs ?? BARRIER_TIMEOUT_MS;
  const jsm = await jetstreamManager(nc, { timeout: BARRIER_QUERY_TIMEOUT_MS });
  const streamInfo = async () => {
    try {
      return await jsm.streams.info(INVALIDATION_STREAM);
    } catch {
      try {
        await jsm.streams.add({
          name: INVALIDATION_STREAM,
          subjects: [INVALIDATION_SUBJECT],
          max_age: INVALIDATION_MAX_AGE_NS,
          allow_direct: true,
        });
      } catch (err) {
        // Another replica may have created it meanwhile.
        logger.debug({ err }, "touch stream exists already");
      }
      return jsm.streams.info(INVALIDATION_STREAM);
    }
  };
  let info = await streamInfo();
  // A stream an earlier version made has no direct gets: allowed now (harmless to every reader).
  if (!info.config.allow_direct && info.config.num_replicas <= 1) {
    try {
      info = await jsm.streams.update(INVALIDATION_STREAM, { allow_direct: true });
    } catch (err) {
      logger.debug({ err }, "touch stream kept without direct gets");
    }
  }
  const direct = info.config.allow_direct && info.config.num_replicas <= 1;
  /**
   * The stream's last sequence. A direct get of its last touch answers at about half the cost of a stream info
   * (measured: 0.12 against 0.24 ms, and half the server's CPU); only on a stream of one replica, since with more a
   * direct get may be served by a follower that lags, and the barrier would promise too little. A stream whose
   * touches all expired has no last touch: its info still knows the sequence.
   */
  const lastSequence = async () => {
    const last = direct
      ? await jsm.direct.getMessage(INVALIDATION_STREAM, { last_by_subj: INVALIDATION_SUBJECT })
      : null;
    return last ? last.seq : (await jsm.streams.info(INVALIDATION_STREAM)).state.last_seq;
  };
  const start = info.state.last_seq;
  await backlog.createIndex({ at: 1 }, { name: "at" });

  /** Whether this process put touches in the backlog since its relay last emptied it; when it last looked anyway. */
  let ownBacklog = false;
  let lookedAt = 0;
  /** The last stream sequence applied to the cache. */
  let applied = start;
  /** Reads waiting for `applied` to reach a sequence. */
  const waiting = new Set<{ upTo: number; wake: () => void }>();
  const advance = (seq: number) => {
    applied = seq;
    for (const w of waiting) {
      if (applied >= w.upTo) {
        waiting.delete(w);
        w.wake();
      }
    }
  };
  const dropAll = (why: string) => {
    cache.clear();
    logger.debug({ why }, "build read cache dropped");
  };

  const consumer = await js.consumers.get(INVALIDATION_STREAM, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: start + 1,
  });
  const messages = await consumer.consume({ max_messages: 256 });
  const consuming = (async () => {
    for await (const msg of messages) {
      if (msg.seq !== applied + 1) dropAll(`touch ${msg.seq} follows ${applied}: touches were missed`);
      const touch = decodeTouch(msg.data);
      if (touch) cache.invalidate(touch);
      else dropAll(`touch ${msg.seq} could not be read`);
      advance(msg.seq);
    }
  })().catch((err) => logger.warn({ err }, "touch consumer stopped"));

  // While disconnected, touches may be published by others and expire unseen: start afresh.
  // Without a connection, a touch goes to the backlog and a read to the database at once.
  let connected = true;
  const watching = (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "reconnect") {
        connected = s.type === "reconnect";
        dropAll(`NATS ${s.type}`);
      }
    }
  })().catch(() => {});

  /** One barrier query shared by every read that arrived before it began. */
  let inflight: Promise<number | null> | undefined;
  /** The last look at the backlog: when it began (monotonic ms) and whether it found an entry. */
  let look: { at: number; pending: Promise<boolean> } | undefined;
  const backlogPending = (): Promise<boolean> => {
    const at = performance.now();
    if (look && at - look.at < BACKLOG_LOOK_MS) return look.pending;
    const pending = within(
      backlog.findOne({}, { projection: { _id: 1 } }).then((doc) => doc !== null),
      BARRIER_QUERY_TIMEOUT_MS,
    );
    // A failed look stands for nothing.
    pending.catch(() => {
      if (look?.pending === pending) look = undefined;
    });
    look = { at, pending };
    return pending;
  };

  const query = async (): Promise<number | null> => {
    const [last, pending] = await Promise.all([lastSequence(), backlogPending()]);
    if (pending) return null;
    if (last < applied) {
      // The stream was made again (its data lost): what was applied no longer describes it.
      dropAll(`stream sequence went back from ${applied} to ${last}`);
      applied = last;
    }
    return last;
  };
  const sharedQuery = async (): Promise<number | null> => {
    // A query already under way may have begun before this read: wait for it, then share the next one.
    if (inflight) await inflight.catch(() => null);
    inflight ??= query().finally(() => {
      inflight = undefined;
    });
    return inflight;
  };

  const reached = (upTo: number) =>
    new Promise<boolean>((resolve) => {
      if (applied >= upTo) return resolve(true);
      const w = { upTo, wake: () => resolve(true) };
      waiting.add(w);
      setTimeout(() => {
        if (waiting.delete(w)) resolve(false);
      }, barrierTimeoutMs).unref();
    });

  const publishTouch = (t: Invalidation) =>
    js.publish(INVALIDATION_SUBJECT, encodeTouch(t), { timeout: INVALIDATION_PUBLISH_TIMEOUT_MS });

  /** Puts touches in the stream as one, or in the backlog when the stream cannot take them. */
  const sendTouches = async (list: Invalidation[]) => {
    const t = mergeInvalidations(list);
    try {
      if (!connected) throw new Error("not connected to NATS");
      await publishTouch(t);
    } catch (err) {
      // While disconnected every write comes here: the disconnection itself is what is worth a warning.
      if (connected) logger.warn({ err }, "touch not published; kept in the backlog");
      else logger.debug("NATS disconnected: touch kept in the backlog");
      ownBacklog = true;
      await backlog.insertOne({ _id: opts.newId(), touch: t, at: new Date() });
      // Until every replica's next look at the backlog has begun (see BACKLOG_LOOK_MS).
      await new Promise((resolve) => setTimeout(resolve, BACKLOG_ACK_DELAY_MS));
    }
  };
  // Touches of writes that end while one is being published go together in the next message (group commit): a
  // create makes three touches, and concurrent creates would otherwise publish and apply each on its own.
  const touches = createGroupCommit<Invalidation>({ send: sendTouches, maxSize: INVALIDATIONS_PER_MESSAGE });

  return {
    async publish(t) {
      // This replica's own reads see the change at once, whatever the stream does.
      cache.invalidate(t);
      await touches.add(t);
    },

    async barrier() {
      if (!connected) return false;
      try {
        const upTo = await sharedQuery();
        return upTo !== null && (await reached(upTo));
      } catch (err) {
        logger.debug({ err }, "touch barrier failed: reading the database");
        dropAll("barrier failed");
        return false;
      }
    },

    async relay(relayOpts) {
      const now = Date.now();
      if (!relayOpts?.force && !ownBacklog && now - lookedAt < FOREIGN_BACKLOG_MS) return;
      lookedAt = now;
      // Cleared first: a touch put in the backlog while this pass runs sets it again for the next pass.
      ownBacklog = false;
      try {
        const entries = await backlog.find({}).sort({ at: 1 }).limit(500).toArray();
        for (const entry of entries) {
          await publishTouch(entry.touch);
          await backlog.deleteOne({ _id: entry._id });
        }
        if (entries.length === 500) ownBacklog = true;
      } catch (err) {
        ownBacklog = true;
        throw err;
      }
    },

    async stop() {
      await messages.close();
      await consuming;
      void watching;
    },
  };
}
