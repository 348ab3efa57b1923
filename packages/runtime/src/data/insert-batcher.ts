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
import { createGroupCommit, type Waiting } from "../concurrency/group-commit.js";

export type InsertMany<D> = (docs: D[]) => Promise<unknown>;

export interface InsertBatcherOptions {
  /** Documents in one command at most (a caller's documents are never split; default 500). */
  maxDocs?: number;
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

/** Settles each caller of an insert with its own documents' outcome. */
function settle<D>(batch: readonly Waiting<readonly D[]>[], err: unknown) {
  const errors = err === undefined ? [] : writeErrorsOf(err);
  // No document's own error (a lost connection, a write concern not met): the command as a whole failed.
  if (errors === undefined || (err !== undefined && errors.length === 0)) {
    for (const w of batch) w.reject(err);
    return;
  }
  const byIndex = new Map(errors.map((e) => [e.index, e]));
  let start = 0;
  for (const w of batch) {
    let failed: WriteErrorLike | undefined;
    for (let i = start; i < start + w.item.length && !failed; i++) failed = byIndex.get(i);
    start += w.item.length;
    if (failed) w.reject(documentError(failed, err));
    else w.resolve();
  }
}

/** Creates the grouped inserts of one collection over its `insertMany` (see the module doc above). */
export function createInsertBatcher<D>(insertMany: InsertMany<D>, opts: InsertBatcherOptions = {}) {
  const group = createGroupCommit<readonly D[]>({
    send: (items) => insertMany(items.flat() as D[]),
    settle,
    maxSize: opts.maxDocs ?? 500,
    sizeOf: (docs) => docs.length,
  });
  return {
    /** Inserts `docs` (in the next command); resolves when they are stored, rejects with their error. */
    insert(docs: readonly D[]): Promise<void> {
      return docs.length === 0 ? Promise.resolve() : group.add(docs);
    },
  };
}

export type InsertBatcher<D> = ReturnType<typeof createInsertBatcher<D>>;
