import { Code, ConnectError } from "@connectrpc/connect";
import { createGroupCommit } from "@conveyor/runtime";

/** How the calls of a batched RPC are gathered (see the group commit in @conveyor/runtime). */
export interface BatchedCallOptions<I, R> {
  /** The batch RPC's name, for the error of an answer of the wrong length. */
  name: string;
  /** Items per batch call at most. */
  maxSize: number;
  /** Batch calls under way at once. */
  concurrency: number;
  /** A batch call under way longer than this (ms) lets the items behind it go (none: it keeps its slot). */
  slotMs?: number;
  /** How long (ms) a lone item waits for others to go with it (none: it goes at once). */
  lingerMs?: number;
  /** The batch call: one result per item, in order (a per-item error is a result too). */
  many(items: I[]): Promise<R[]>;
  /** One item as its own call, for a service without the batch call (Unimplemented: an older replica). */
  one(item: I): Promise<R>;
}

/**
 * A call whose items go to the service together (group commit): each caller gets its own item's result, or its own
 * error where the service answered it alone; a batch call that fails as a whole fails each of its items with that
 * error. The gateway's batched build reads and agents' heartbeats go through it.
 */
export function createBatchedCall<I, R>(opts: BatchedCallOptions<I, R>): (item: I) => Promise<R> {
  interface Pending {
    item: I;
    result?: R;
    error?: unknown;
  }
  const batches = createGroupCommit<Pending>({
    maxSize: opts.maxSize,
    concurrency: opts.concurrency,
    ...(opts.slotMs === undefined ? {} : { slotMs: opts.slotMs }),
    ...(opts.lingerMs === undefined ? {} : { lingerMs: opts.lingerMs }),
    send: async (pending) => {
      let results: R[];
      try {
        results = await opts.many(pending.map((p) => p.item));
      } catch (err) {
        if (!(err instanceof ConnectError) || err.code !== Code.Unimplemented) throw err;
        await Promise.all(
          pending.map(async (p) => {
            try {
              p.result = await opts.one(p.item);
            } catch (own) {
              p.error = own;
            }
          }),
        );
        return;
      }
      if (results.length !== pending.length) {
        throw new Error(`${opts.name} answered ${results.length} items of ${pending.length}`);
      }
      pending.forEach((p, i) => {
        p.result = results[i];
      });
    },
  });
  return async (item) => {
    const pending: Pending = { item };
    await batches.add(pending);
    if (pending.error !== undefined) throw pending.error;
    return pending.result as R;
  };
}
