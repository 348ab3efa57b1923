import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  JobLogInfo,
  StreamJobLogRequest,
  StreamJobLogRequestSchema,
  StreamJobLogResponse,
} from "@conveyor/proto/builds";
import { createLineSplitter, type LogLine } from "./log-lines.js";
import { createSectionPlanner, type SectionPlan } from "./log-sections.js";

/** The builds service's StreamJobLog, as the gateway's client calls it. */
export type StreamJobLog = (
  request: MessageInitShape<typeof StreamJobLogRequestSchema>,
  options?: { signal?: AbortSignal },
) => AsyncIterable<StreamJobLogResponse>;

/** A job of a build, as StreamJobLog names it. */
export type JobLogRef = Pick<StreamJobLogRequest, "pipelineId" | "number" | "jobId">;

/** How much of a long log a page shows at first: its last 2 MiB (docs/pages.md#logs). */
export const TAIL_BYTES = 2 * 1024 * 1024;

/** A log opened for reading: its info, then its bytes as the builds service sends them, with their offsets. */
export interface OpenedLog {
  info: JobLogInfo;
  /** Pieces in offset order; consumed once. */
  pieces: AsyncIterable<{ offset: number; bytes: Uint8Array }>;
}

/** Opens a job's log (all of it, or a range) and reads its info. */
export async function openLog(
  stream: StreamJobLog,
  ref: JobLogRef,
  range: { fromOffset?: number; tailBytes?: number } = {},
  signal?: AbortSignal,
): Promise<OpenedLog> {
  const request = {
    ...ref,
    fromOffset: BigInt(range.fromOffset ?? 0),
    tailBytes: BigInt(range.tailBytes ?? 0),
  };
  const iterator = stream(request, signal ? { signal } : {})[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done || first.value.part.case !== "info") throw new Error("the log stream did not start with its info");
  const info = first.value.part.value;
  async function* pieces() {
    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        if (next.value.part.case === "data") yield { offset: Number(next.value.offset), bytes: next.value.part.value };
      }
    } finally {
      // A reader that stops early (a client gone) ends the call, so the service stops sending.
      await iterator.return?.();
    }
  }
  return { info, pieces: pieces() };
}

/** A log's tail as lines, and whether lines before it were left out. */
export interface LogTail {
  info: JobLogInfo;
  lines: LogLine[];
  /** The offset of the first line shown; 0 when the whole log is shown. */
  start: number;
  /** True when the log holds more before `start`. */
  cut: boolean;
  /** The offset just after the last byte read: where a reader of what comes next starts. */
  end: number;
}

/**
 * The last `tailBytes` of a job's log, as lines. One byte more is read, so that a line starting exactly at the cut
 * is known to start there (its `\n` comes first); the partial line before is dropped.
 */
export async function readLogTail(stream: StreamJobLog, ref: JobLogRef, tailBytes = TAIL_BYTES): Promise<LogTail> {
  const { info, pieces } = await openLog(stream, ref, { tailBytes: tailBytes + 1 });
  let splitter: ReturnType<typeof createLineSplitter> | undefined;
  const lines: LogLine[] = [];
  let first = -1;
  let end = 0;
  for await (const piece of pieces) {
    if (!splitter) {
      first = piece.offset;
      splitter = createLineSplitter(piece.offset, piece.offset > 0);
    }
    for (const line of splitter.push(piece.bytes)) lines.push(line);
    end = piece.offset + piece.bytes.length;
  }
  if (splitter) lines.push(...splitter.end());
  const start = first <= 0 ? 0 : (lines[0]?.offset ?? end);
  return { info, lines, start, cut: start > 0, end };
}

/** A log's lines in batches (a piece's worth each), read as they arrive: what is held is one piece. */
export async function* linesOf(pieces: OpenedLog["pieces"]): AsyncGenerator<LogLine[]> {
  let splitter: ReturnType<typeof createLineSplitter> | undefined;
  for await (const piece of pieces) {
    splitter ??= createLineSplitter(piece.offset, piece.offset > 0);
    const lines = splitter.push(piece.bytes);
    if (lines.length > 0) yield lines;
  }
  const last = splitter?.end() ?? [];
  if (last.length > 0) yield last;
}

/**
 * Reads a whole log once for its group markers only, and answers which groups are open (log-sections.ts): the first
 * of the two reads of a streamed rendering. Nothing but a few numbers per marker is kept.
 */
export async function planLog(stream: StreamJobLog, ref: JobLogRef, signal?: AbortSignal): Promise<SectionPlan> {
  const { pieces } = await openLog(stream, ref, {}, signal);
  const planner = createSectionPlanner();
  for await (const batch of linesOf(pieces)) for (const line of batch) planner.add(line);
  return planner.plan();
}
