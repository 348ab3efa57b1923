import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Collection } from "mongodb";
import type { Logger } from "pino";
import { createKeyedLock, type KeyedLock } from "../concurrency/keyed-lock.js";
import { fallbackLogger } from "../process/fallback-logger.js";
import { isDuplicateKeyError } from "./duplicate-key.js";

/** A held lock: its key, a token naming this holding, and when the holding lapses if never released. */
export interface LeaseDoc {
  _id: string;
  holder: string;
  until: Date;
}

export interface LeaseLockOptions {
  /** How long a holding lasts if its process dies without releasing it. */
  leaseMs?: number;
  /** How long a caller waits for a key before giving up with Unavailable. */
  waitMs?: number;
  /** How often a waiting caller tries again. */
  pollMs?: number;
  /** Where a holding that could not be released is reported. */
  logger?: Pick<Logger, "warn">;
}

/**
 * Runs async work one at a time per key across every process that shares `collection` (the replicas of a service),
 * for read-check-write rules that a compare-and-set on one document cannot express (a team keeps one maintainer
 * among several member documents). A key is held by inserting its document (the unique _id decides between
 * processes) and released by deleting it; a holding whose process died lapses after `leaseMs`, so work must take
 * less than that. Within a process, callers queue on a keyed lock first, so only one of them polls the database.
 */
export function createLeaseLock(collection: Collection<LeaseDoc>, opts: LeaseLockOptions = {}): KeyedLock {
  const leaseMs = opts.leaseMs ?? 15_000;
  const waitMs = opts.waitMs ?? 10_000;
  const pollMs = opts.pollMs ?? 20;
  const local = createKeyedLock();

  const acquire = async (key: string): Promise<string> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const holder = randomUUID();
      const until = new Date(Date.now() + leaseMs);
      try {
        await collection.insertOne({ _id: key, holder, until });
        return holder;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      // Held: take it over only if that holding lapsed (its process died).
      const lapsed = await collection.findOneAndUpdate(
        { _id: key, until: { $lt: new Date() } },
        { $set: { holder, until } },
      );
      if (lapsed) return holder;
      if (Date.now() > deadline) throw new ConnectError(`${key} stayed busy for ${waitMs} ms`, Code.Unavailable);
      await sleep(pollMs);
    }
  };

  return (key, work) =>
    local(key, async () => {
      const holder = await acquire(key);
      try {
        return await work();
      } finally {
        await collection.deleteOne({ _id: key, holder }).catch((err: unknown) => {
          // The work is done: its caller gets its answer, and the holding lapses after the lease; until then the
          // key's other callers wait (or give up with Unavailable), which the warning explains.
          (opts.logger ?? fallbackLogger()).warn({ err, key, leaseMs }, "lease not released; it lapses after leaseMs");
        });
      }
    });
}
