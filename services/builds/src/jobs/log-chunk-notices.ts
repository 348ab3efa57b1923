import { create, toBinary } from "@bufbuild/protobuf";
import { JobLogChunkStoredSchema } from "@conveyor/proto/builds";
import { jobLogSubject, type Logger } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";

/** A chunk of a job's log just stored, as announced. */
export interface StoredChunk {
  jobId: string;
  offset: number;
  /** Uncompressed length. */
  size: number;
  /** The chunk gzip-compressed, as the agent sent it. */
  gzip: Uint8Array;
}

/** Announces stored log chunks to the gateways' live pages (docs/pages.md#live-updates). */
export interface LogChunkNotices {
  stored(chunk: StoredChunk): void;
}

/** Announces nothing: a builds service without NATS (unit tests of other parts). */
export const NO_LOG_CHUNK_NOTICES: LogChunkNotices = { stored() {} };

/** NATS's own default limit of one message, used until the server said its own. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** What a notice publisher counts, for tests and logs. */
export interface LogChunkNoticeStats {
  published: number;
  /** Notices sent without their bytes, which were too large for one message. */
  withoutBytes: number;
  failed: number;
}

/**
 * Publishes one core NATS message per stored chunk on the job's subject (jobLogSubject): fire and forget, since a
 * gateway that misses one reads the log instead. The chunk's gzip bytes go along when the message fits the server's
 * largest payload (nats-server's max_payload, 1 MiB by default); otherwise the notice goes without them, and the
 * gateways read the chunk from this service. A failed publish (NATS gone) is logged and counted, never thrown: the
 * chunk is stored, and the agent's upload must not fail for a page.
 */
export function createLogChunkNotices(
  nc: Pick<NatsConnection, "publish" | "info">,
  logger: Pick<Logger, "warn">,
): LogChunkNotices & { stats: LogChunkNoticeStats } {
  const stats: LogChunkNoticeStats = { published: 0, withoutBytes: 0, failed: 0 };
  const encode = (chunk: StoredChunk, withBytes: boolean) =>
    toBinary(
      JobLogChunkStoredSchema,
      create(JobLogChunkStoredSchema, {
        jobId: chunk.jobId,
        offset: BigInt(chunk.offset),
        size: chunk.size,
        gzip: withBytes ? chunk.gzip : new Uint8Array(0),
      }),
    );
  return {
    stats,
    stored(chunk) {
      const maxPayload = nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
      let data = encode(chunk, true);
      if (data.length > maxPayload) {
        data = encode(chunk, false);
        stats.withoutBytes++;
      }
      try {
        nc.publish(jobLogSubject(chunk.jobId), data);
        stats.published++;
      } catch (err) {
        stats.failed++;
        logger.warn({ err, jobId: chunk.jobId, offset: chunk.offset }, "log chunk notice not published");
      }
    },
  };
}
