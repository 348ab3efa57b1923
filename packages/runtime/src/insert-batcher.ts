/**
 * Inserts into one collection sent together (group commit): documents handed in while an insert is under way go to
 * the database in the next one, as a single unordered `insertMany`. With nothing under way a document goes at once,
 * so a lone insert waits for nothing; under load, ten concurrent inserts cost one command.
 *
 * Measured on the bundled FerretDB (SQLite): a single-document insert costs it as much as a ten-document one, so
 * ten builds created at once stored their documents about five times faster together than one by one.
 *
 * Each caller's documents succeed or fail on their own: the batch is unordered, and a write error (a duplicate key)
 * is handed to the caller whose document caused it, as an error with the server's code and message, so
 * `isDuplicateKeyError` tells it as before. When the command as a whole fails, every caller in it gets that error.
 * An unordered insert stores every other document of a caller whose one document failed, as an ordered insert stores
 * those before it: a caller that inserts several documents must treat a failure as "some may be stored" either way.
 */
export type InsertMany<D> = (docs: D[]) => Promise<unknown>;

export interface InsertBatcherOptions {
  /** Documents in one command at most (a caller's documents are never split; default 500). */
  maxDocs?: number;
}

interface Pending<D> {
  docs: readonly D[];
  resolve(): void;
  reject(err: unknown): void;
}

/** A write error of one document: its index in the command's documents, and what the server said. */
interface WriteErrorLike {
  index: number;
  code?: unknown;
  errmsg?: unknown;
  message?: unknown;
}

/** The write errors of a failed unordered insert, when the server ran the command (the driver's bulk write error). */
function writeErrorsOf(err: unknown): WriteErrorLike[] | undefined {
  if (typeof err !== "object" || err === null || !("writeErrors" in err)) return undefined;
  const raw = (err as { writeErrors: unknown }).writeErrors;
  const list = Array.isArray(raw) ? raw : raw ? [raw] : [];
  return list.every((w) => typeof w === "object" && w !== null && typeof w.index === "number")
    ? (list as WriteErrorLike[])
    : undefined;
}

/** The error a caller gets for its document's write error: the server's code and message. */
function documentError(w: WriteErrorLike, cause: unknown): Error {
  const message = typeof w.errmsg === "string" ? w.errmsg : typeof w.message === "string" ? w.message : "write error";
  return Object.assign(new Error(message, { cause }), { code: w.code });
}

export function createInsertBatcher<D>(insertMany: InsertMany<D>, opts: InsertBatcherOptions = {}) {
  const maxDocs = Math.max(1, opts.maxDocs ?? 500);
  let waiting: Pending<D>[] = [];
  let busy = false;

  const takeBatch = (): Pending<D>[] => {
    let count = 0;
    let taken = 0;
    while (taken < waiting.length) {
      const size = waiting[taken]?.docs.length ?? 0;
      if (taken > 0 && count + size > maxDocs) break;
      count += size;
      taken++;
    }
    const batch = waiting.slice(0, taken);
    waiting = waiting.slice(taken);
    return batch;
  };

  const settle = (batch: Pending<D>[], err: unknown) => {
    const errors = err === undefined ? [] : writeErrorsOf(err);
    // No document's own error (a lost connection, a write concern not met): the command as a whole failed.
    if (errors === undefined || (err !== undefined && errors.length === 0)) {
      for (const p of batch) p.reject(err);
      return;
    }
    const byIndex = new Map(errors.map((w) => [w.index, w]));
    let start = 0;
    for (const p of batch) {
      let failed: WriteErrorLike | undefined;
      for (let i = start; i < start + p.docs.length && !failed; i++) failed = byIndex.get(i);
      start += p.docs.length;
      if (failed) p.reject(documentError(failed, err));
      else p.resolve();
    }
  };

  const pump = () => {
    if (busy || waiting.length === 0) return;
    const batch = takeBatch();
    busy = true;
    let sent: Promise<unknown>;
    try {
      sent = insertMany(batch.flatMap((p) => p.docs));
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent
      .then(
        () => settle(batch, undefined),
        (err: unknown) => settle(batch, err),
      )
      .finally(() => {
        busy = false;
        pump();
      });
  };

  return {
    /** Inserts `docs` (in the next command); resolves when they are stored, rejects with their error. */
    insert(docs: readonly D[]): Promise<void> {
      if (docs.length === 0) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ docs, resolve, reject });
        pump();
      });
    },
  };
}

export type InsertBatcher<D> = ReturnType<typeof createInsertBatcher<D>>;
