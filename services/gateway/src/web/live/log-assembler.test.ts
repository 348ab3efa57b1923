import fc from "fast-check";
import { type ChunkNotice, createLogAssembler, type LogPiece, type LogReader } from "./log-assembler.js";

/** A job's stored log: the chunks stored so far, read as the builds service streams them from an offset. */
function store(log: Uint8Array, sizes: number[]) {
  const chunks: Array<{ offset: number; bytes: Uint8Array }> = [];
  let offset = 0;
  for (const size of sizes) {
    if (offset >= log.length) break;
    const bytes = log.subarray(offset, Math.min(offset + size, log.length));
    chunks.push({ offset, bytes });
    offset += bytes.length;
  }
  if (offset < log.length) chunks.push({ offset, bytes: log.subarray(offset) });
  const stored = new Set<number>();
  let reads = 0;
  /** As StreamJobLog with from_offset: the stored chunks from the one holding `from` on, gaps skipped, trimmed. */
  const read: LogReader = async function* (from: number, signal: AbortSignal): AsyncGenerator<LogPiece> {
    reads++;
    await Promise.resolve();
    for (const i of [...stored].sort((a, b) => a - b)) {
      const c = chunks[i] as { offset: number; bytes: Uint8Array };
      if (signal.aborted) return;
      if (c.offset + c.bytes.length <= from) continue;
      const skip = Math.max(0, from - c.offset);
      yield { offset: c.offset + skip, bytes: c.bytes.subarray(skip) };
    }
  };
  const notice = (i: number, withBytes = true): ChunkNotice => {
    const c = chunks[i] as { offset: number; bytes: Uint8Array };
    return { offset: c.offset, size: c.bytes.length, bytes: withBytes ? c.bytes : null };
  };
  return { chunks, stored, read, notice, reads: () => reads };
}

/** An assembler from `from` over `read`, checking that every emit continues the last and is the log's bytes. */
function assemble(log: Uint8Array, from: number, read: LogReader, opts: { maxPendingBytes?: number } = {}) {
  const out: number[] = [];
  let end = from;
  const errors: unknown[] = [];
  const assembler = createLogAssembler({
    from,
    read,
    gapWaitMs: 1,
    maxGapWaitMs: 4,
    ...opts,
    emit(offset, bytes) {
      if (offset !== end) throw new Error(`emitted at ${offset}, expected ${end}`);
      expect(Buffer.from(bytes)).toEqual(Buffer.from(log.subarray(offset, offset + bytes.length)));
      end += bytes.length;
      out.push(...bytes);
    },
    onReadError: (err) => errors.push(err),
  });
  return { assembler, bytes: () => Uint8Array.from(out), end: () => end, errors };
}

const settle = (ms = 10) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until `done()` holds, or 5 s have passed (a loaded machine runs timers late); the test's assertions follow. */
async function until(done: () => boolean) {
  for (const deadline = Date.now() + 5_000; !done() && Date.now() < deadline; ) await settle(5);
}
const text = (s: string) => new TextEncoder().encode(s);

describe("the log assembler", () => {
  it("emits chunks that arrive in order at once, and holds one that arrives early until its gap is filled", async () => {
    const log = text("aaaa\nbbbb\ncccc\n");
    const s = store(log, [5, 5, 5]);
    const a = assemble(log, 0, s.read);
    s.stored.add(0);
    a.assembler.push(s.notice(0));
    expect(a.end()).toBe(5);
    s.stored.add(2);
    a.assembler.push(s.notice(2));
    expect(a.end()).toBe(5);
    s.stored.add(1);
    a.assembler.push(s.notice(1));
    expect(a.end()).toBe(15);
    // A duplicate changes nothing.
    a.assembler.push(s.notice(1));
    expect(a.end()).toBe(15);
    expect(s.reads()).toBe(0);
    a.assembler.close();
  });

  it("reads a gap no notice filled after a short wait, and a chunk announced without its bytes at once", async () => {
    const log = text("one\ntwo\nthree\nfour\n");
    const s = store(log, [4, 4, 6, 5]);
    const a = assemble(log, 0, s.read);
    // Chunk 0 was stored but its notice was lost; chunk 1's notice arrives.
    s.stored.add(0).add(1);
    a.assembler.push(s.notice(1));
    expect(a.end()).toBe(0);
    await settle();
    expect(a.end()).toBe(8);
    s.stored.add(2);
    a.assembler.push(s.notice(2, false));
    await settle(2);
    expect(a.end()).toBe(14);
    a.assembler.close();
    expect(a.errors).toEqual([]);
  });

  it("resumes from an offset: nothing before it, everything after it once, the rest read when the job ends", async () => {
    const log = text("0123456789abcdefghij");
    const s = store(log, [7, 7, 6]);
    for (const i of [0, 1, 2]) s.stored.add(i);
    const a = assemble(log, 9, s.read);
    await a.assembler.catchUp();
    expect(new TextDecoder().decode(a.bytes())).toBe("9abcdefghij");
    // Notices of what it already has change nothing.
    for (const i of [0, 1, 2]) a.assembler.push(s.notice(i));
    expect(a.end()).toBe(20);
  });

  it("stops reading at a gap in the store, and reads past it once the missing chunk is stored", async () => {
    const log = text("aaaa\nbbbb\ncccc\n");
    const s = store(log, [5, 5, 5]);
    s.stored.add(0).add(2);
    const a = assemble(log, 0, s.read);
    await a.assembler.catchUp();
    expect(a.end()).toBe(5);
    s.stored.add(1);
    a.assembler.push(s.notice(1));
    a.assembler.push(s.notice(2));
    expect(a.end()).toBe(15);
  });

  it("drops what it holds ahead of a gap when it is too much, and reads it instead", async () => {
    const log = text("x".repeat(100));
    const s = store(log, Array(10).fill(10));
    const a = assemble(log, 0, s.read, { maxPendingBytes: 25 });
    for (let i = 1; i < 10; i++) {
      s.stored.add(i);
      a.assembler.push(s.notice(i));
    }
    // Chunk 0 is stored last and its notice lost: with the chunks ahead dropped, only reading gets them back.
    s.stored.add(0);
    await a.assembler.catchUp();
    expect(a.end()).toBe(100);
    expect(s.reads()).toBeGreaterThanOrEqual(2);
  });

  it("reports a failed read and reads again later", async () => {
    const log = text("abc\n");
    const s = store(log, [4]);
    s.stored.add(0);
    let fail = true;
    const read: LogReader = (from, signal) => {
      if (fail) {
        fail = false;
        throw new Error("builds unavailable");
      }
      return s.read(from, signal);
    };
    const a = assemble(log, 0, read);
    a.assembler.push(s.notice(0, false));
    await until(() => a.end() === 4);
    expect(a.errors.map(String)).toEqual(["Error: builds unavailable"]);
    expect(a.end()).toBe(4);
  });

  it("emits every byte from its offset exactly once, in order, whatever order, duplicates, losses and reads", async () => {
    const action = fc.record({
      /** Which of the stored-but-not-announced chunks to store next (chosen by index modulo). */
      pick: fc.nat(),
      /** What becomes of its notice. */
      notice: fc.constantFrom("bytes", "bytes", "bytes", "without", "lost", "twice"),
      /** Whether a pause lets the assembler's timers and reads run. */
      pause: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 0, maxLength: 600 }),
        fc.array(fc.integer({ min: 1, max: 120 }), { minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.array(action, { maxLength: 20 }),
        async (log, sizes, fromSeed, actions) => {
          const s = store(log, sizes);
          // A reader resumes at some offset of the log (its start, its end, or between).
          const from = fromSeed % (log.length + 1);
          const a = assemble(log, from, s.read);
          const unstored = s.chunks.map((_, i) => i);
          const begin = a.assembler.catchUp();
          for (const step of actions) {
            if (unstored.length === 0) break;
            const i = unstored.splice(step.pick % unstored.length, 1)[0] as number;
            s.stored.add(i);
            if (step.notice === "bytes" || step.notice === "twice") a.assembler.push(s.notice(i));
            if (step.notice === "twice") a.assembler.push(s.notice(i));
            if (step.notice === "without") a.assembler.push(s.notice(i, false));
            if (step.pause) await settle(2);
          }
          await begin;
          // The job ends: every chunk is stored, and the last read gets whatever is missing.
          for (const i of unstored) s.stored.add(i);
          await a.assembler.catchUp();
          expect(Buffer.from(a.bytes())).toEqual(Buffer.from(log.subarray(from)));
          a.assembler.close();
          expect(a.errors).toEqual([]);
        },
      ),
      { numRuns: 150 },
    );
  });
});
