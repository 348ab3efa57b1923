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

/** One line's record from its raw text (without its `\n`). */
export function readLine(raw: string, offset: number): LogLine {
  let at: number | null = null;
  // Timestamps are read before carriage returns are collapsed: a progress line's time is when it began.
  for (const m of raw.matchAll(APC_TIMESTAMP)) {
    at ??= Number(m[1]);
  }
  const text = collapseCarriageReturns(raw.replace(APC_TIMESTAMP, "").replace(OTHER_APC, ""));
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
 * The lines of a piece of a log starting at byte `start` of the whole log. With `partialFirst`, the piece begins
 * mid-line (a tail): its first line is dropped, since its start is not there. A last line without `\n` is kept (a
 * running job's log grows).
 */
export function splitLog(bytes: Uint8Array, start = 0, partialFirst = false): LogLine[] {
  const lines: LogLine[] = [];
  const decoder = new TextDecoder("utf-8");
  let from = 0;
  let skip = partialFirst;
  while (from < bytes.length) {
    const nl = bytes.indexOf(0x0a, from);
    const end = nl < 0 ? bytes.length : nl;
    if (!skip) lines.push(readLine(decoder.decode(bytes.subarray(from, end)), start + from));
    skip = false;
    from = end + 1;
  }
  return lines;
}
