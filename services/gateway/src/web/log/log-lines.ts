/**
 * A job log as lines, the way Buildkite shows it: split at `\n`, each line keeping its byte
 * offset in the log (its anchor); a carriage return inside a line is a terminal overwriting it, so only what
 * follows the last one is kept (progress bars collapse to their final state); the agent's timestamp marks
 * (`ESC _bk;t=<ms> BEL`, an APC sequence) are taken out and kept as the line's time; and a line starting with `--- `,
 * `+++ ` or `~~~ ` opens a group, `^^^ +++` expands the group it ends. Pure: bytes in, records out.
 */

/** How a group header shows its group. */
export type GroupKind = "collapsed" | "expanded" | "deemphasized";

/** One line of a log. */
export interface LogLine {
  /** Byte offset of the line's start in the whole log: its anchor, the same in the tail and in the whole log. */
  offset: number;
  /** When the agent printed it (the first timestamp mark on the line), in ms since the epoch; null without one. */
  at: number | null;
  /** Its text with ANSI styles kept, timestamp marks and overwritten parts removed. */
  text: string;
  /** Set when the line opens a group: how, and its title (the text after the marker). */
  header?: { kind: GroupKind; title: string };
  /** True for `^^^ +++`: expand the group this line ends; the line itself is not shown. */
  expandsPrevious?: boolean;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences are what this reads
const APC_TIMESTAMP = /\x1b_bk;t=(\d{1,16})\x07/g;
/** Any other APC, OSC-less private sequence the agent may add: removed rather than shown as text. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences are what this reads
const OTHER_APC = /\x1b_[^\x07\x1b]{0,256}(?:\x07|\x1b\\)/g;
/** ANSI escapes, for reading a line's markers without its styles. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences are what this reads
const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g;

/** The visible text of a line: its ANSI escapes removed. */
export function plainText(text: string): string {
  return text.replace(ANSI, "");
}

/** Keeps what a terminal shows of a line with carriage returns: the part after the last one that has text after it. */
export function collapseCarriageReturns(line: string): string {
  const trimmed = line.endsWith("\r") ? line.replace(/\r+$/, "") : line;
  const last = trimmed.lastIndexOf("\r");
  return last < 0 ? trimmed : trimmed.slice(last + 1);
}

const HEADER = /^(---|\+\+\+|~~~) (.*)$/s;
const KINDS: Record<string, GroupKind> = { "---": "collapsed", "+++": "expanded", "~~~": "deemphasized" };

/** Any marker a line could start with once its styles are removed: a cheap test before reading it exactly. */
const MAYBE_MARKER = /(?:---|\+\+\+|~~~|\^\^\^) /;

/** One line's record from its raw text (without its `\n`). */
export function readLine(raw: string, offset: number): LogLine {
  let at: number | null = null;
  let text: string;
  if (raw.includes("\x1b")) {
    // Timestamps are read before carriage returns are collapsed: a progress line's time is when it began.
    APC_TIMESTAMP.lastIndex = 0;
    const first = APC_TIMESTAMP.exec(raw);
    if (first) at = Number(first[1]);
    text = collapseCarriageReturns(raw.replace(APC_TIMESTAMP, "").replace(OTHER_APC, ""));
  } else {
    text = collapseCarriageReturns(raw);
  }
  // Most lines are no marker: the exact reading (styles removed) is only for those that may be one.
  if (!MAYBE_MARKER.test(text)) return { offset, at, text };
  const plain = plainText(text);
  if (plain.trimEnd() === "^^^ +++") return { offset, at, text, expandsPrevious: true };
  const header = HEADER.exec(plain);
  if (header) {
    const kind = KINDS[header[1] as string] as GroupKind;
    // The title keeps its styles: drop the marker from the styled text.
    const marker = text.indexOf(header[1] as string);
    const title = text.slice(marker + 4);
    return { offset, at, text, header: { kind, title: plainText(title).trim() === "" ? "" : title } };
  }
  return { offset, at, text };
}

/**
 * The longest line kept whole: a longer one is cut into lines of at most this many bytes (at a character's
 * boundary), so that reading a log holds at most this much of it however its lines run.
 */
export const MAX_LINE_BYTES = 1024 * 1024;

/** Splits a log arriving in pieces into lines, holding only the line not yet ended. */
export interface LineSplitter {
  /** The lines the piece ends (a piece may end mid-line, even mid-character: the rest waits for the next). */
  push(piece: Uint8Array): LogLine[];
  /** The last line, when the log does not end with `\n` (a running job's log grows). */
  end(): LogLine[];
}

/**
 * The length of the longest prefix of `bytes` (at most `max`) that does not end inside a UTF-8 character: where a
 * long line is cut (also by live updates, web/live/live-lines.ts, so that both cut it alike).
 */
export function characterBoundary(bytes: Uint8Array, max: number): number {
  let at = Math.min(max, bytes.length);
  // Back off continuation bytes (10xxxxxx) to the start of the character they belong to.
  while (at > 0 && at < bytes.length && ((bytes[at] as number) & 0xc0) === 0x80) at--;
  return at === 0 ? Math.min(max, bytes.length) : at;
}

/**
 * A line splitter for a piece of a log starting at byte `start` of the whole log. With `partialFirst`, the piece
 * begins mid-line (a tail): its first line is dropped, since its start is not there.
 */
export function createLineSplitter(start = 0, partialFirst = false): LineSplitter {
  const decoder = new TextDecoder("utf-8");
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  /** Offset of the first byte of the line not yet ended. */
  let lineStart = start;
  let skip = partialFirst;
  const emit = (out: LogLine[], bytes: Uint8Array) => {
    if (!skip) out.push(readLine(decoder.decode(bytes), lineStart));
    skip = false;
  };
  const take = () => {
    const bytes = pending.length === 1 ? (pending[0] as Uint8Array) : Buffer.concat(pending);
    pending = [];
    pendingBytes = 0;
    return bytes;
  };
  return {
    push(piece) {
      const out: LogLine[] = [];
      let from = 0;
      while (from < piece.length) {
        const nl = piece.indexOf(0x0a, from);
        if (nl < 0) {
          pending.push(piece.subarray(from));
          pendingBytes += piece.length - from;
          // A line longer than the limit is cut: what is held never grows past it.
          while (pendingBytes >= MAX_LINE_BYTES) {
            const bytes = take();
            const cut = characterBoundary(bytes, MAX_LINE_BYTES);
            emit(out, bytes.subarray(0, cut));
            lineStart += cut;
            if (cut < bytes.length) {
              pending = [bytes.subarray(cut)];
              pendingBytes = bytes.length - cut;
            }
          }
          break;
        }
        const tail = piece.subarray(from, nl);
        const bytes = pendingBytes === 0 ? tail : Buffer.concat([...pending, tail]);
        pending = [];
        pendingBytes = 0;
        emit(out, bytes);
        lineStart += bytes.length + 1;
        from = nl + 1;
      }
      return out;
    },
    end() {
      if (pendingBytes === 0) return [];
      const out: LogLine[] = [];
      emit(out, take());
      return out;
    },
  };
}

/**
 * The lines of a piece of a log starting at byte `start` of the whole log. With `partialFirst`, the piece begins
 * mid-line (a tail): its first line is dropped, since its start is not there. A last line without `\n` is kept (a
 * running job's log grows).
 */
export function splitLog(bytes: Uint8Array, start = 0, partialFirst = false): LogLine[] {
  const splitter = createLineSplitter(start, partialFirst);
  return [...splitter.push(bytes), ...splitter.end()];
}
