import type { ChunkSpan, JobLogRepository, LogChunk } from "./job-log-repository.js";
import { asStored } from "./memory-document.js";

/**
 * An in-memory JobLogRepository for tests, with the MongoDB implementation's unique (job, offset) key and offset
 * order.
 */
export function createMemoryJobLogRepository(): JobLogRepository {
  /** Each job's chunks by offset. */
  const logs = new Map<string, Map<number, LogChunk>>();
  const deletions = new Map<string, Date>();
  const chunksOf = (jobId: string) => [...(logs.get(jobId)?.values() ?? [])].sort((a, b) => a.offset - b.offset);
  const span = (chunk: LogChunk | undefined): ChunkSpan | null =>
    chunk ? { offset: chunk.offset, size: chunk.size, sha256: chunk.sha256 } : null;

  return {
    async insertChunk(chunk) {
      const chunks = logs.get(chunk.jobId) ?? new Map<number, LogChunk>();
      if (chunks.has(chunk.offset)) return false;
      chunks.set(chunk.offset, asStored(chunk));
      logs.set(chunk.jobId, chunks);
      return true;
    },
    async findChunk(jobId, offset) {
      return span(logs.get(jobId)?.get(offset));
    },
    async chunkBelow(jobId, end) {
      return span(chunksOf(jobId).findLast((c) => c.offset < end));
    },
    async extent(jobId) {
      return { size: chunksOf(jobId).reduce((sum, c) => sum + c.size, 0), deleted: deletions.has(jobId) };
    },
    async deleted(jobId) {
      return deletions.has(jobId);
    },
    async *chunks(jobId, from = 0) {
      const chunks = chunksOf(jobId);
      const floor = chunks.findLast((c) => c.offset <= from)?.offset ?? 0;
      for (const chunk of chunks) if (chunk.offset >= floor) yield asStored(chunk);
    },
    async delete(jobId, at) {
      if (!deletions.has(jobId)) deletions.set(jobId, at);
      logs.delete(jobId);
    },
    async removeLogsOf(jobIds) {
      for (const jobId of jobIds) {
        logs.delete(jobId);
        deletions.delete(jobId);
      }
    },
  };
}
