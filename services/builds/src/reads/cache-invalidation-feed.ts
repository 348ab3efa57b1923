/**
 * How every replica of the builds service learns what the others changed, fast enough to serve reads from memory
 * and never older than a change its caller saw acknowledged.
 *
 * - A write is acknowledged only after its invalidation (what it changed: read-cache.ts) is in the JetStream stream
 *   (invalidation-stream.ts), or, when NATS cannot take it, in the database's backlog (which a relay publishes
 *   later) and BACKLOG_ACK_DELAY_MS have passed.
 * - Invalidations of writes that finish while one is being published go together as one message (group commit).
 * - Every replica applies the stream in order and remembers the last sequence applied.
 * - A read first asks the stream for its last sequence (one round trip, shared by every read waiting at that
 *   moment) and uses a look at the backlog begun at most BACKLOG_LOOK_MS ago, then waits until it has applied up to
 *   that sequence. Any invalidation acknowledged before the read began is then applied. With a backlog entry, an
 *   error, or a wait past BARRIER_TIMEOUT_MS, the read goes to the database.
 * - A gap in the sequence (invalidations expired before they were applied), a lost connection, a stream started
 *   again, or a loop that broke (the stream's reader or the connection's status) drop everything kept. The two loops
 *   are supervised (the runtime's supervised-loop.ts): a broken one is logged, counted and opened again, and until
 *   the stream's reader runs again every read goes to the database.
 * - Reads that wait the whole timeout are counted and logged (barrier-timeouts.ts). A reader that applies nothing
 *   for READER_STALL_MS while reads wait on it is closed, so that its loop opens it again from the stream's end
 *   (the cache dropped) rather than every read waiting out the timeout until the consumer recovers by itself.
 */

import { createGroupCommit, type Logger, superviseLoop } from "@conveyor/runtime";
import type { InvalidationBacklog } from "../store/invalidation-backlog-repository.js";
import { createBarrierTimeouts } from "./barrier-timeouts.js";
import type { InvalidationStream } from "./invalidation-stream.js";
import { type Invalidation, mergeInvalidations, type ReadCache } from "./read-cache.js";

/** The most invalidations published as one message (a merged invalidation of 100 creates is about 12 KB). */
const INVALIDATIONS_PER_MESSAGE = 100;
/**
 * How long a read waits for a look at the backlog: with the database gone the read goes to the database at once
 * rather than after the client's own timeout. The stream's last sequence is bounded alike (invalidation-stream.ts).
 */
const BACKLOG_LOOK_TIMEOUT_MS = 500;
/** How long a read waits for the invalidations before it reads the database instead (unless told otherwise). */
const BARRIER_TIMEOUT_MS = 250;
/**
 * How long the stream's reader may deliver nothing while reads wait on it before it is opened again. A JetStream
 * pull consumer whose pull the server no longer holds delivers nothing until two idle heartbeats are missed (30 s
 * with the client's defaults), and every read meanwhile waits the whole barrier timeout.
 */
const READER_STALL_MS = 2_000;
/**
 * How long a look at the backlog stands for reads. A write whose invalidation went to the backlog is acknowledged
 * only BACKLOG_ACK_DELAY_MS after, twice as long: any read that begins after that acknowledgement uses a look begun
 * after the entry was stored, so it sees the entry (and reads the database), while reads cost the database nothing.
 */
const BACKLOG_LOOK_MS = 50;
const BACKLOG_ACK_DELAY_MS = 2 * BACKLOG_LOOK_MS;
/** How often a relay looks for backlog entries it did not write itself (those of a process that died). */
const FOREIGN_BACKLOG_MS = 15_000;
/** Backlog entries one relay pass publishes at most. */
const RELAY_BATCH = 500;

/** Makes changes known to every replica, and tells a read when what is kept may be served. */
export interface InvalidationFeed {
  /**
   * Applies the invalidation to this replica's cache at once, then resolves once it is durable (in the stream or the
   * backlog): only then may its write be acknowledged. Rejects when neither took it.
   */
  publish(t: Invalidation): Promise<void>;
  /** True once every invalidation acknowledged before the call is applied here; false: read the database. */
  barrier(): Promise<boolean>;
  /**
   * Publishes backlog entries (the relay, on a timer): at once when this process put some there, else only every
   * FOREIGN_BACKLOG_MS (entries a process left when it died), unless `force`.
   */
  relay(opts?: { force?: boolean }): Promise<void>;
  stop(): Promise<void>;
  /** Reads whose barrier gave up waiting (they went to the database), and the last stream sequence applied. */
  stats(): { barrierTimeouts: number; applied: number };
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
const encode = (t: Invalidation) => encoder.encode(JSON.stringify(t));
/** The invalidation a message holds; an error saying why when it holds none. */
function decode(data: Uint8Array): Invalidation {
  const t = JSON.parse(decoder.decode(data)) as Invalidation;
  if (!Array.isArray(t.builds) || !Array.isArray(t.pipelines) || !Array.isArray(t.organizations))
    throw new Error("not an invalidation");
  return t;
}

/** Starts applying the invalidation stream to `cache`. */
export async function startInvalidationFeed(opts: {
  stream: InvalidationStream;
  backlog: InvalidationBacklog;
  cache: ReadCache;
  logger: Logger;
  newId: () => string;
  /** How long a read waits for invalidations before it reads the database (default BARRIER_TIMEOUT_MS). */
  barrierTimeoutMs?: number;
  /** The first pause before a broken loop is opened again (the runtime's default when absent). */
  reopenBackoffMs?: number;
  /** How long the reader may deliver nothing while reads wait before it is opened again (READER_STALL_MS). */
  readerStallMs?: number;
}): Promise<InvalidationFeed> {
  const { stream, backlog, cache, logger } = opts;
  const barrierTimeoutMs = opts.barrierTimeoutMs ?? BARRIER_TIMEOUT_MS;
  const readerStallMs = opts.readerStallMs ?? READER_STALL_MS;

  /** Whether this process put invalidations in the backlog since its relay last emptied it; when it last looked. */
  let ownBacklog = false;
  let lookedAt = 0;
  /** The last stream sequence applied to the cache. */
  let applied = await stream.lastSequence();
  /** Whether the stream's reader runs: while it does not, nothing kept can be proved current. */
  let reading = false;
  /** Reads waiting for `applied` to reach a sequence. */
  const waiting = new Set<{ upTo: number; wake: () => void }>();
  /** Since when reads have waited on the reader without it applying anything (undefined: it moved since). */
  let stalledSince: number | undefined;
  const advance = (seq: number) => {
    applied = seq;
    stalledSince = undefined;
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

  let opened = 0;
  /** The reader's source now, to close when it stalls (the loop then opens it again). */
  let current: { close?: () => void | Promise<void> } | undefined;
  /** Settles once the reader was first opened, or failed to open (its loop then tries again). */
  let firstOpen: () => void = () => {};
  const firstOpened = new Promise<void>((resolve) => {
    firstOpen = resolve;
  });
  const reader = superviseLoop({
    name: "builds.cache-invalidations",
    logger,
    ...(opts.reopenBackoffMs !== undefined ? { backoffMs: opts.reopenBackoffMs } : {}),
    async open() {
      // Opened again after a break: what was missed meanwhile is unknown, so the cache starts afresh from the
      // stream's end (everything up to it was written before the cache was emptied).
      if (opened++ > 0) {
        const last = await stream.lastSequence();
        dropAll("the invalidation stream's reader was opened again");
        advance(last);
      }
      const source = await stream.readFrom(applied + 1);
      current = source;
      reading = true;
      firstOpen();
      return source;
    },
    handle(msg) {
      if (msg.seq !== applied + 1) dropAll(`invalidation ${msg.seq} follows ${applied}: some were missed`);
      try {
        cache.invalidate(decode(msg.data));
      } catch (err) {
        dropAll(`invalidation ${msg.seq} could not be read`);
        logger.warn({ err, seq: msg.seq }, "unreadable invalidation: the build read cache was dropped");
      }
      advance(msg.seq);
    },
    onBreak() {
      reading = false;
      current = undefined;
      firstOpen();
      dropAll("the invalidation stream's reader broke");
    },
  });

  // While disconnected, invalidations may be published by others and expire unseen: start afresh. Without a
  // connection, an invalidation goes to the backlog and a read to the database at once.
  let connected = true;
  const statusWatch = superviseLoop({
    name: "builds.nats-status",
    logger,
    ...(opts.reopenBackoffMs !== undefined ? { backoffMs: opts.reopenBackoffMs } : {}),
    open: () => stream.status(),
    handle(s) {
      if (s.type === "disconnect" || s.type === "reconnect") {
        connected = s.type === "reconnect";
        dropAll(`NATS ${s.type}`);
      }
      // The connection is closed for good (shutdown): nothing is left to read or watch.
      if (s.type === "close") {
        stop().catch((err: unknown) => logger.warn({ err }, "the cache invalidation feed did not stop cleanly"));
      }
    },
    // Disconnections may go unseen until it runs again.
    onBreak: () => dropAll("the NATS status watch broke"),
  });

  /** One barrier query shared by every read that arrived before it began. */
  let inflight: Promise<number | null> | undefined;
  /** The last look at the backlog: when it began (monotonic ms) and whether it found an entry. */
  let look: { at: number; pending: Promise<boolean> } | undefined;
  const backlogPending = (): Promise<boolean> => {
    const at = performance.now();
    if (look && at - look.at < BACKLOG_LOOK_MS) return look.pending;
    const pending = within(backlog.hasAny(), BACKLOG_LOOK_TIMEOUT_MS);
    // A failed look stands for nothing (its readers see the failure themselves and go to the database).
    pending.catch(() => {
      if (look?.pending === pending) look = undefined;
    });
    look = { at, pending };
    return pending;
  };

  const query = async (): Promise<number | null> => {
    // The stream's queries time out on their own (invalidation-stream.ts).
    const [last, pending] = await Promise.all([stream.lastSequence(), backlogPending()]);
    if (pending) return null;
    if (last < applied) {
      // The stream was made again (its data lost): what was applied no longer describes it.
      dropAll(`stream sequence went back from ${applied} to ${last}`);
      applied = last;
    }
    return last;
  };
  const sharedQuery = async (): Promise<number | null> => {
    // A query already under way may have begun before this read: wait for it (whatever its outcome, which its own
    // readers are told), then share the next one.
    if (inflight) await inflight.catch(() => null);
    inflight ??= query().finally(() => {
      inflight = undefined;
    });
    return inflight;
  };

  // A read that waited the whole timeout is logged (rate-limited): the reader is behind, every read pays the wait.
  const timeouts = createBarrierTimeouts();
  /** The reader applied nothing for READER_STALL_MS while reads waited on it: its source is closed and opened again. */
  const reopenStalled = (since: number, upTo: number) => {
    const source = current;
    if (!source || performance.now() - since < readerStallMs) return;
    current = undefined;
    stalledSince = undefined;
    logger.warn(
      { applied, upTo, stalledMs: Math.round(performance.now() - since) },
      "the invalidation stream's reader delivered nothing while reads waited: opening it again",
    );
    Promise.resolve(source.close?.()).catch((err: unknown) =>
      logger.warn({ err }, "the stalled invalidation reader did not close cleanly"),
    );
  };

  const reached = (upTo: number) =>
    new Promise<boolean>((resolve) => {
      if (applied >= upTo) return resolve(true);
      const w = { upTo, wake: () => resolve(true) };
      waiting.add(w);
      const began = performance.now();
      const from = applied;
      setTimeout(() => {
        if (!waiting.delete(w)) return;
        // Nothing applied during this whole wait: the reader may be stalled rather than slow.
        if (applied === from) {
          stalledSince ??= began;
          reopenStalled(stalledSince, upTo);
        }
        const warning = timeouts.gaveUp(performance.now(), upTo - applied);
        if (warning) {
          logger.warn(
            {
              timedOut: warning.timedOut,
              mostBehind: warning.mostBehind,
              forMs: Math.round(performance.now() - warning.sinceMs),
              applied,
              upTo,
            },
            "build read cache: reads waited the whole barrier timeout for the invalidation stream and went to the database",
          );
        }
        resolve(false);
      }, barrierTimeoutMs).unref();
    });

  /** Puts invalidations in the stream as one, or in the backlog when the stream cannot take them. */
  const send = async (list: Invalidation[]) => {
    const t = mergeInvalidations(list);
    try {
      if (!connected) throw new Error("not connected to NATS");
      await stream.publish(encode(t));
    } catch (err) {
      try {
        await backlog.add({ id: opts.newId(), invalidation: t, at: new Date() });
      } catch (backlogError) {
        throw new AggregateError([err, backlogError], "invalidation neither published nor kept in the backlog");
      }
      ownBacklog = true;
      // While disconnected every write comes here: the disconnection itself is what is worth a warning.
      if (connected) logger.warn({ err }, "invalidation not published; kept in the backlog");
      else logger.debug("NATS disconnected: invalidation kept in the backlog");
      // Until every replica's next look at the backlog has begun (see BACKLOG_LOOK_MS).
      await new Promise((resolve) => setTimeout(resolve, BACKLOG_ACK_DELAY_MS));
    }
  };
  // Invalidations of writes that end while one is being published go together in the next message (group commit):
  // a create makes three, and concurrent creates would otherwise publish and apply each on its own.
  const outgoing = createGroupCommit<Invalidation>({ send, maxSize: INVALIDATIONS_PER_MESSAGE });

  /** Stops both loops (a function declaration: the status loop calls it when the connection closes). */
  async function stop() {
    await Promise.all([reader.stop(), statusWatch.stop()]);
  }
  await firstOpened;

  return {
    async publish(t) {
      // This replica's own reads see the change at once, whatever the stream does.
      cache.invalidate(t);
      await outgoing.add(t);
    },

    async barrier() {
      if (!connected || !reading) return false;
      try {
        const upTo = await sharedQuery();
        return upTo !== null && (await reached(upTo));
      } catch (err) {
        logger.debug({ err }, "invalidation barrier failed: reading the database");
        dropAll("barrier failed");
        return false;
      }
    },

    async relay(relayOpts) {
      const now = Date.now();
      if (!relayOpts?.force && !ownBacklog && now - lookedAt < FOREIGN_BACKLOG_MS) return;
      lookedAt = now;
      // Cleared first: an invalidation put in the backlog while this pass runs sets it again for the next pass.
      ownBacklog = false;
      try {
        const entries = await backlog.oldest(RELAY_BATCH);
        for (const entry of entries) {
          await stream.publish(encode(entry.invalidation));
          await backlog.remove(entry.id);
        }
        if (entries.length === RELAY_BATCH) ownBacklog = true;
      } catch (err) {
        ownBacklog = true;
        throw err;
      }
    },

    stop,

    stats: () => ({ barrierTimeouts: timeouts.total(), applied }),
  };
}
