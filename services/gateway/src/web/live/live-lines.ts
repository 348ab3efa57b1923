/**
 * A job's log bytes, as they arrive live, cut into lines for a page: each update holds the lines from the start of
 * the line still being written (so the page replaces that line when it grows or completes) up to the bytes so far,
 * rendered as the page renders a log (web/log/). A reader resumes at the start of the unfinished line: the end of
 * the last complete line is its position (the SSE event id; docs/pages.md#live-updates).
 */
import { createAnsiToHtml } from "../log/ansi-html.js";
import { renderLogHtml } from "../log/log-html.js";
import { characterBoundary, MAX_LINE_BYTES, splitLog } from "../log/log-lines.js";

/** What a page gets for some new bytes of a log. */
export interface LinesUpdate {
  /** The byte offset of the first line the HTML holds: the page's line with this anchor, if any, is replaced. */
  from: number;
  /** Where the complete lines end: a reader that has this update resumes here. */
  resumeAt: number;
  /** The lines, rendered (web/log/log-html.ts), the last one possibly unfinished. */
  html: string;
}

/** Renders the lines of `bytes`, which start a line at byte `from` of the log. */
export type RenderLines = (from: number, bytes: Uint8Array) => string;

/** The page's rendering of log lines, with a converter whose colours start plain at `from`. */
export const renderLines: RenderLines = (from, bytes) =>
  renderLogHtml(splitLog(bytes, from), { ansi: createAnsiToHtml() }).value;

export interface LineCutter {
  /** Where complete lines end: the offset a reader resumes at. */
  readonly resumeAt: number;
  /** Takes bytes that continue the log (at `offset`, the end of the previous ones); the update for the page. */
  push(offset: number, bytes: Uint8Array): LinesUpdate | null;
  /** The log ended: its unfinished line is complete. The update for it, if it had one. */
  finish(): LinesUpdate | null;
}

/**
 * Cuts a log into lines from `resumeAt`, which starts a line. `render` may be shared by readers at the same place
 * (the same bytes from the same offset render the same HTML).
 */
export function createLineCutter(resumeAt: number, render: RenderLines = renderLines): LineCutter {
  let lineStart = resumeAt;
  let unfinished: Uint8Array = new Uint8Array(0);

  const update = (bytes: Uint8Array, complete: number): LinesUpdate => {
    const from = lineStart;
    lineStart += complete;
    unfinished = bytes.subarray(complete);
    return { from, resumeAt: lineStart, html: render(from, bytes) };
  };

  return {
    get resumeAt() {
      return lineStart;
    },
    push(offset, bytes) {
      if (offset !== lineStart + unfinished.length)
        throw new Error(`log bytes at ${offset} do not continue the log at ${lineStart + unfinished.length}`);
      if (bytes.length === 0) return null;
      const all = unfinished.length === 0 ? bytes : Buffer.concat([unfinished, bytes]);
      let complete = all.lastIndexOf(0x0a) + 1;
      // A line longer than the renderer keeps whole is cut where it cuts it (log-lines.ts): the lines and anchors
      // are the page's, and what is held of an endless line stays bounded.
      while (all.length - complete >= MAX_LINE_BYTES)
        complete += characterBoundary(all.subarray(complete), MAX_LINE_BYTES);
      return update(all, complete);
    },
    finish() {
      if (unfinished.length === 0) return null;
      return update(unfinished, unfinished.length);
    },
  };
}
