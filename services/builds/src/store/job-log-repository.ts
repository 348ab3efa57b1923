import { isDuplicateKeyError } from "@conveyor/runtime";
import { Binary, type Collection, type Db } from "mongodb";

/** One piece of a job's log as the agent sent it: `size` bytes at `offset`, gzip-compressed. */
export interface LogChunk {
  jobId: string;
  sequence: number;
  offset: number;
  size: number;
  /** SHA-256 (hex) of the uncompressed bytes, to tell a retried chunk from a different one. */
  sha256: string;
  gzip: Uint8Array;
}

/** Where a stored chunk lies. */
export type ChunkSpan = Pick<LogChunk, "offset" | "size" | "sha256">;

/** What a job's log holds: its length and whether it was deleted. */
export interface LogExtent {
  /** The uncompressed bytes stored. */
  size: number;
  deleted: boolean;
}

/** Storage of job logs: chunks keyed by (job, offset), read back in offset order. */
export interface JobLogRepository {
  /** Stores a chunk; false when one was stored at that offset already (a retried upload). */
  insertChunk(chunk: LogChunk): Promise<boolean>;
  /** The chunk stored at an offset, if any. */
  findChunk(jobId: string, offset: number): Promise<ChunkSpan | null>;
  /** The stored chunk with the greatest offset below `end`, if any (one indexed read). */
  chunkBelow(jobId: string, end: number): Promise<ChunkSpan | null>;
  extent(jobId: string): Promise<LogExtent>;
  /** Whether the log was deleted (one indexed read; extent reads every chunk's size). */
  deleted(jobId: string): Promise<boolean>;
  /**
   * The chunks in offset order, read a few at a time: all of them, or those from the last one starting at or before
   * byte `from` on (the one holding it, unless the log has a gap there).
   */
  chunks(jobId: string, from?: number): AsyncIterable<LogChunk>;
  /** Removes every chunk and remembers that the log was deleted. */
  delete(jobId: string, at: Date): Promise<void>;
  /** Removes the logs of jobs that are gone (their pipeline was deleted), deletion marks included. */
  removeLogsOf(jobIds: readonly string[]): Promise<void>;
}

interface ChunkDoc {
  jobId: string;
  sequence: number;
  offset: number;
  size: number;
  /** Absent on chunks stored before it was recorded. */
  sha256?: string;
  data: Binary;
}

const span = (doc: Pick<ChunkDoc, "offset" | "size" | "sha256">): ChunkSpan => ({
  offset: doc.offset,
  size: doc.size,
  sha256: doc.sha256 ?? "",
});
const SPAN = { projection: { _id: 0, offset: 1, size: 1, sha256: 1 } } as const;

interface DeletionDoc {
  _id: string;
  deletedAt: Date;
}

/** How many chunks a read holds in memory at once (each at most the chunk size the agents are told, gzip). */
const READ_BATCH = 8;

/**
 * The MongoDB implementation. Logs live in the builds database beside their jobs: chunks are small, written often
 * and read in order, which an index on (job, offset) serves; a log is deleted with one deleteMany.
 */
export async function createMongoJobLogRepository(db: Db): Promise<JobLogRepository> {
  const chunks: Collection<ChunkDoc> = db.collection("job_log_chunks");
  const deletions: Collection<DeletionDoc> = db.collection("job_log_deletions");
  await chunks.createIndex({ jobId: 1, offset: 1 }, { unique: true, name: "job_offset_unique" });
  return {
    async insertChunk(chunk) {
      try {
        await chunks.insertOne({
          jobId: chunk.jobId,
          sequence: chunk.sequence,
          offset: chunk.offset,
          size: chunk.size,
          sha256: chunk.sha256,
          data: new Binary(chunk.gzip),
        });
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async findChunk(jobId, offset) {
      const doc = await chunks.findOne({ jobId, offset }, SPAN);
      return doc && span(doc);
    },
    async chunkBelow(jobId, end) {
      const doc = await chunks.findOne({ jobId, offset: { $lt: end } }, { ...SPAN, sort: { jobId: 1, offset: -1 } });
      return doc && span(doc);
    },
    async extent(jobId) {
      const [sizes, deletion] = await Promise.all([
        chunks.find({ jobId }, { projection: { _id: 0, size: 1 } }).toArray(),
        deletions.findOne({ _id: jobId }),
      ]);
      return { size: sizes.reduce((sum, c) => sum + c.size, 0), deleted: deletion !== null };
    },
    deleted: async (jobId) => (await deletions.findOne({ _id: jobId })) !== null,
    async *chunks(jobId, from = 0) {
      // The chunk holding `from` starts at or before it: the nearest start at or before it (the index answers it).
      const floor =
        from > 0
          ? await chunks.findOne(
              { jobId, offset: { $lte: from } },
              { projection: { _id: 0, offset: 1 }, sort: { jobId: 1, offset: -1 } },
            )
          : null;
      const filter = floor ? { jobId, offset: { $gte: floor.offset } } : { jobId };
      const cursor = chunks.find(filter).sort({ jobId: 1, offset: 1 }).batchSize(READ_BATCH);
      try {
        for await (const doc of cursor) {
          yield {
            jobId: doc.jobId,
            sequence: doc.sequence,
            offset: doc.offset,
            size: doc.size,
            sha256: doc.sha256 ?? "",
            gzip: doc.data.buffer,
          };
        }
      } finally {
        await cursor.close();
      }
    },
    async delete(jobId, at) {
      await deletions.updateOne({ _id: jobId }, { $setOnInsert: { deletedAt: at } }, { upsert: true });
      await chunks.deleteMany({ jobId });
    },
    async removeLogsOf(jobIds) {
      if (jobIds.length === 0) return;
      await chunks.deleteMany({ jobId: { $in: [...jobIds] } });
      await deletions.deleteMany({ _id: { $in: [...jobIds] } });
    },
  };
}
