/**
 * One live reader's view of a job's log: the chunks the builds service announces as it stores them (log-chunks.ts)
 * come in any order (an agent has up to three uploads in flight), possibly twice, possibly not at all (core NATS
 * keeps nothing for a subscriber that was away), and some without their bytes (too large for one NATS message).
 * The assembler turns them into the log's bytes in order, each byte once: it emits only what continues its
 * position, keeps what lies ahead, and reads from the builds service whatever it cannot get otherwise: the start
 * (from the reader's offset), a gap no chunk filled after a short wait, a chunk announced without its bytes, and the
 * rest once the job finished. See docs/pages.md#live-updates.
 */

/** A stored chunk as announced: `size` bytes at `offset`; `bytes` null when they were not carried (read them). */
export interface ChunkNotice {
  offset: number;
  size: number;
  bytes: Uint8Array | null;
}

/** Stored bytes of a log at an offset. */
export interface LogPiece {
  offset: number;
  bytes: Uint8Array;
}

/**
 * Reads the stored log from `from` on: pieces in offset order, each with its offset (the builds service's
 * StreamJobLog). The assembler stops reading at the first gap (a piece starting past what it has), or when `signal`
 * aborts.
 */
export type LogReader = (from: number, signal: AbortSignal) => AsyncIterable<LogPiece>;

export interface LogAssemblerOptions {
  /** The offset the reader has the log up to: the first byte emitted is this one. */
  from: number;
  read: LogReader;
  /** Gets the log's bytes in order: `bytes` start at `offset`, which is always the end of the previous ones. */
  emit(offset: number, bytes: Uint8Array): void;
  /**
   * Resolves when the reader can take more: a read waits for it before each piece, so that catching up on a long
   * log goes at the client's pace instead of piling up in the gateway. Announced chunks never wait (they come at the
   * log's own pace).
   */
  room?(): Promise<void>;
  /** Reports a read that failed (it is tried again later); the assembler goes on. */
  onReadError(err: unknown): void;
  /** How long a gap may stay before it is read: the chunk may be on its way. Default 250 ms. */
  gapWaitMs?: number;
  /** The longest pause between reads of a gap that reading did not fill (doubling from gapWaitMs). Default 5 s. */
  maxGapWaitMs?: number;
  /** The most bytes kept ahead of the position; beyond, they are dropped and read later. Default 4 MiB. */
  maxPendingBytes?: number;
}

export interface LogAssembler {
  /** The offset up to which bytes were emitted. */
  readonly position: number;
  /** Takes an announced chunk. */
  push(notice: ChunkNotice): void;
  /** Reads what is stored from the position on (at the start, and when the job finished); resolves when done. */
  catchUp(): Promise<void>;
  /** Stops: no more reads or emits; a read under way is aborted. */
  close(): void;
}

/** Creates an assembler at `opts.from`. Nothing is read until push or catchUp asks for it. */
export function createLogAssembler(opts: LogAssemblerOptions): LogAssembler {
  const gapWaitMs = opts.gapWaitMs ?? 250;
  const maxGapWaitMs = opts.maxGapWaitMs ?? 5_000;
  const maxPendingBytes = opts.maxPendingBytes ?? 4 * 1024 * 1024;
  let position = opts.from;
  /** Chunks ahead of the position, by offset. */
  const pending = new Map<number, ChunkNotice>();
  let pendingBytes = 0;
  let closed = false;
  let reading: Promise<void> | undefined;
  let readAgain = false;
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let gapWait = gapWaitMs;

  const emit = (offset: number, bytes: Uint8Array) => {
    // Only what continues the position: the part of `bytes` past it.
    const end = offset + bytes.length;
    if (closed || offset > position || end <= position) return;
    const fresh = bytes.subarray(position - offset);
    position = end;
    opts.emit(end - fresh.length, fresh);
  };

  const forget = (offset: number) => {
    const chunk = pending.get(offset);
    if (!chunk) return;
    pending.delete(offset);
    pendingBytes -= chunk.bytes?.length ?? 0;
  };

  /** Emits what the pending chunks continue; then, if something is still missing, schedules a read. */
  const drain = () => {
    for (;;) {
      for (const [offset, chunk] of pending) if (offset + chunk.size <= position) forget(offset);
      const covering = [...pending.values()].find((c) => c.offset <= position && position < c.offset + c.size);
      if (!covering?.bytes) break;
      forget(covering.offset);
      emit(covering.offset, covering.bytes);
    }
    if (pending.size === 0) {
      gapWait = gapWaitMs;
      return;
    }
    const covering = [...pending.values()].some((c) => c.offset <= position);
    // A chunk announced without its bytes is read at once; a gap waits a little for the chunk on its way.
    schedule(covering ? 0 : gapWait);
  };

  const schedule = (ms: number) => {
    if (closed || timer || reading) return;
    timer = setTimeout(() => {
      timer = undefined;
      void catchUp();
    }, ms);
    timer.unref?.();
  };

  const readOnce = async () => {
    const before = position;
    try {
      for await (const piece of opts.read(position, abort.signal)) {
        if (closed) return;
        // The store has a gap here too (a chunk still on its way): what follows it is not contiguous yet.
        if (piece.offset > position) break;
        emit(piece.offset, piece.bytes);
        await opts.room?.();
      }
    } catch (err) {
      if (closed) return;
      opts.onReadError(err);
    }
    // A gap the store could not fill yet: look again later, less often each time.
    gapWait = position > before ? gapWaitMs : Math.min(gapWait * 2, maxGapWaitMs);
  };

  const catchUp = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (reading) {
      // A read under way may have started before what the caller waits for was stored: read once more after it.
      readAgain = true;
      return reading;
    }
    reading = (async () => {
      do {
        readAgain = false;
        await readOnce();
      } while (readAgain && !closed);
    })().finally(() => {
      reading = undefined;
      drain();
    });
    return reading;
  };

  return {
    get position() {
      return position;
    },
    push(notice) {
      if (closed || notice.offset + notice.size <= position) return;
      const held = pending.get(notice.offset);
      // The same chunk twice: keep the copy that carries its bytes.
      if (held && (held.bytes || !notice.bytes)) return;
      if (held) forget(held.offset);
      pending.set(notice.offset, notice);
      pendingBytes += notice.bytes?.length ?? 0;
      if (pendingBytes > maxPendingBytes) {
        // Too much ahead of a gap: drop it and read it from the store once the gap is filled.
        pending.clear();
        pendingBytes = 0;
        void catchUp();
        return;
      }
      drain();
    },
    catchUp,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      abort.abort();
      pending.clear();
      pendingBytes = 0;
    },
  };
}
