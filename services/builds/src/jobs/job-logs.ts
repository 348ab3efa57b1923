import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { failedPrecondition, invalidFields, notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Job } from "../domain/job.js";
import { RUNNING_JOB_STATES } from "../domain/state-sets.js";
import { placeChunk, placementEnd } from "./chunk-placement.js";
import { type LogChunkNotices, NO_LOG_CHUNK_NOTICES } from "./log-chunk-notices.js";
import { requireRunningJob } from "./running-job.js";

/** Limits of job logs. */
export interface LogLimits {
  /** The largest uncompressed chunk accepted (agents are told a smaller chunk size). */
  maxChunkBytes: number;
  /** The largest log kept; chunks past it are refused (agents are told the same limit and stop sending). */
  maxLogBytes: number;
}

/** The most header times one job may hold, and so one call may record (docs/limits.md). */
export const MAX_HEADER_TIMES = 10_000;

/** What a streamed log yields: its info first, then its bytes in order, each piece with its offset in the log. */
export type LogPart =
  | { info: { size: number; headerTimes: Record<string, string>; deleted: boolean } }
  | { data: Buffer; offset: number };

/** Which part of a log to stream: from a byte offset, and at most its last `tailBytes` bytes (0: no limit). */
export interface LogRange {
  fromOffset: number;
  tailBytes: number;
}

/**
 * Job logs: chunks in (each announced to live pages once stored), the whole log out in order, deletion; and section
 * header times.
 */
export function createJobLogs(ctx: BuildsContext, limits: LogLimits, notices: LogChunkNotices = NO_LOG_CHUNK_NOTICES) {
  const { repo, logs } = ctx;

  /** The job of a build (by pipeline and number), or NotFound for either. */
  const jobOfBuild = async (pipelineId: string, number: number, jobId: string): Promise<Job> => {
    const build = pipelineId !== "" && number > 0 ? await repo.findBuild(pipelineId, number) : null;
    if (!build) throw notFound("build");
    const job = jobId === "" ? null : await repo.findJob(jobId);
    if (!job || job.buildId !== build.id) throw notFound("job");
    return job;
  };

  return {
    /** Stores one chunk: checks its numbers and that it decompresses to exactly `size` bytes. Idempotent. */
    async append(chunk: { jobId: string; sequence: number; offset: number; size: number; gzip: Uint8Array }) {
      const problems = [];
      if (!Number.isSafeInteger(chunk.sequence) || chunk.sequence < 1)
        problems.push({ field: "sequence", code: "must be a positive integer" });
      if (!Number.isSafeInteger(chunk.offset) || chunk.offset < 0)
        problems.push({ field: "offset", code: "must be an integer, 0 or more" });
      if (!Number.isSafeInteger(chunk.size) || chunk.size < 0 || chunk.size > limits.maxChunkBytes)
        problems.push({ field: "size", code: `must be an integer from 0 to ${limits.maxChunkBytes}` });
      if (problems.length > 0) throw invalidFields(problems);
      let bytes: Buffer;
      try {
        bytes = gunzipSync(chunk.gzip, { maxOutputLength: Math.max(chunk.size, 1) });
      } catch {
        throw invalidFields([{ field: "body", code: `must be gzip data of ${chunk.size} bytes` }]);
      }
      if (bytes.length !== chunk.size)
        throw invalidFields([{ field: "size", code: `is ${chunk.size} but the chunk holds ${bytes.length} bytes` }]);
      if (chunk.offset + chunk.size > limits.maxLogBytes)
        throw failedPrecondition(`The log is longer than the limit of ${limits.maxLogBytes} bytes`);
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      // One chunk of a job at a time in this process, so that the checks and the insert go together (agents never
      // send overlapping chunks; this keeps a wrong client from corrupting the log). The checks are three reads taken
      // together, then one write (docs/architecture.md#data): the job (only while an agent runs it: the agent stops
      // its log before it finishes the job, and a finished job's log never changes again), the log's deletion mark,
      // and the one stored chunk that could be in the way.
      const jobId = await ctx.withLock(`log:${chunk.jobId}`, async () => {
        const [job, deleted, nearest] = await Promise.all([
          requireRunningJob(repo, chunk.jobId),
          logs.deleted(chunk.jobId),
          logs.chunkBelow(chunk.jobId, placementEnd(chunk)),
        ]);
        if (deleted) throw failedPrecondition("The job's log was deleted");
        const placement = placeChunk({ offset: chunk.offset, size: chunk.size, sha256 }, nearest);
        if (placement.kind === "refused") throw failedPrecondition(placement.reason);
        if (placement.kind === "new" && !(await logs.insertChunk({ ...chunk, jobId: job.id, sha256 }))) {
          // Another process stored this offset meanwhile: the same chunk is fine, another is not.
          const raced = await logs.findChunk(job.id, chunk.offset);
          if (raced?.sha256 !== sha256)
            throw failedPrecondition(`Another chunk is already stored at offset ${chunk.offset}`);
        }
        return job.id;
      });
      // Once stored, so that a page reading the log on this notice finds the chunk. A chunk sent again (its upload's
      // answer was lost) is announced again: the first notice may never have gone out, and pages take duplicates.
      notices.stored({ jobId, offset: chunk.offset, size: chunk.size, gzip: chunk.gzip });
    },

    /** Records when section headers were printed (line index → time, as the agent sends them). */
    async setHeaderTimes(jobId: string, times: Record<string, string>) {
      const entries = Object.entries(times);
      if (entries.length > MAX_HEADER_TIMES)
        throw invalidFields([{ field: "header_times", code: `must have at most ${MAX_HEADER_TIMES} entries` }]);
      for (const [line, at] of entries) {
        if (!/^\d{1,9}$/.test(line) || at.length > 64 || Number.isNaN(Date.parse(at)))
          throw invalidFields([
            { field: `header_times.${line.slice(0, 20)}`, code: "must map a line index to a time" },
          ]);
      }
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const job = await requireRunningJob(repo, jobId);
        const held = Object.keys(job.headerTimes).length;
        const total = held + entries.filter(([line]) => !Object.hasOwn(job.headerTimes, line)).length;
        if (total > MAX_HEADER_TIMES)
          throw invalidFields([
            { field: "header_times", code: `would give the job more than ${MAX_HEADER_TIMES} header times` },
          ]);
        // Compare-and-set on the job's state and on how many times it held: a job that finished meanwhile, or
        // another writer, makes this read again.
        if (await repo.setHeaderTimes(jobId, times, { states: RUNNING_JOB_STATES, held, total })) return;
      }
      throw new ConnectError("the job's header times kept changing: try again", Code.Aborted);
    },

    /**
     * The log of a job of a build: its info, then its bytes in pieces of at most one chunk: the whole log, or the
     * range asked for (only the chunks holding it are read).
     */
    async *stream(
      pipelineId: string,
      number: number,
      jobId: string,
      range: LogRange = { fromOffset: 0, tailBytes: 0 },
    ): AsyncGenerator<LogPart> {
      const problems = [];
      if (!Number.isSafeInteger(range.fromOffset) || range.fromOffset < 0)
        problems.push({ field: "from_offset", code: "must be an integer, 0 or more" });
      if (!Number.isSafeInteger(range.tailBytes) || range.tailBytes < 0)
        problems.push({ field: "tail_bytes", code: "must be an integer, 0 or more" });
      if (problems.length > 0) throw invalidFields(problems);
      const job = await jobOfBuild(pipelineId, number, jobId);
      const extent = await logs.extent(job.id);
      yield { info: { size: extent.size, headerTimes: job.headerTimes, deleted: extent.deleted } };
      const start = range.tailBytes > 0 ? Math.max(range.fromOffset, extent.size - range.tailBytes) : range.fromOffset;
      // Bytes before `end` are not sent: those before the range, and (should chunks ever overlap, which append
      // refuses) those already sent.
      let end = start;
      for await (const chunk of logs.chunks(job.id, start)) {
        if (chunk.offset + chunk.size <= end) continue;
        const bytes = gunzipSync(chunk.gzip, { maxOutputLength: Math.max(chunk.size, 1) });
        const skip = Math.max(0, Math.min(end - chunk.offset, bytes.length));
        end = Math.max(end, chunk.offset + chunk.size);
        if (bytes.length > skip) yield { data: bytes.subarray(skip), offset: chunk.offset + skip };
      }
    },

    /** Deletes the log of a job of a build. */
    async delete(pipelineId: string, number: number, jobId: string) {
      const job = await jobOfBuild(pipelineId, number, jobId);
      await logs.delete(job.id, ctx.now());
    },
  };
}

export type JobLogs = ReturnType<typeof createJobLogs>;
