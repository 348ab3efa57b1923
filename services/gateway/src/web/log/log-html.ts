import { html, type SafeHtml, trusted } from "../html.js";
import type { LogLine } from "./log-lines.js";
import { type LogSection, sectionsOf } from "./log-sections.js";

/**
 * ANSI-styled text to HTML, escaping everything else; stateful across calls (a style set on one line holds on the
 * next, as in a terminal). The pages use ansi_up (ansi-html.ts).
 */
export interface AnsiToHtml {
  toHtml(text: string): string;
}

export interface LogHtmlOptions {
  /** A fresh converter for this log (its state starts plain). */
  ansi: AnsiToHtml;
  /** The number of the first line, when the lines start at the log's start (or a known line); else no numbers. */
  firstLineNumber?: number;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** A line's time as UTC `HH:MM:SS` in a <time> element (the page's script shows it in the reader's time zone). */
function timeOf(at: number | null): SafeHtml {
  if (at === null) return html``;
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return html``;
  return html`<time datetime="${d.toISOString()}">${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}</time>`;
}

/** Renders lines into sections of HTML: each line a span with its anchor (`L<byte offset>`), number and time. */
export function renderLogHtml(lines: readonly LogLine[], opts: LogHtmlOptions): SafeHtml {
  // Numbers count every line of the log, markers (`^^^ +++`) included, so they are given in log order.
  const first = opts.firstLineNumber;
  const numbers = new Map<LogLine, number>(first === undefined ? [] : lines.map((l, i) => [l, first + i]));
  const line = (l: LogLine, text: string, header = false) => {
    const n = numbers.get(l);
    const link =
      n === undefined
        ? html`<a class="n" href="#L${l.offset}" aria-label="Link to this line"></a>`
        : html`<a class="n" href="#L${l.offset}">${n}</a>`;
    const text_ = trusted(opts.ansi.toHtml(text));
    return html`<span class="${header ? "l h" : "l"}" id="L${l.offset}">${link}${timeOf(l.at)}<span class="t">${text_}</span></span>`;
  };
  const section = (s: LogSection): SafeHtml => {
    // In log order: the converter carries styles from one line to the next.
    const title = s.header ? line(s.header, s.header.header?.title ?? "", true) : undefined;
    const body = s.lines.map((l) => line(l, l.text));
    if (!title) return html`<div class="s">${body}</div>`;
    const open = s.open ? trusted(" open") : "";
    return html`<details class="g ${s.kind ?? ""}"${open}><summary>${title}</summary>${body}</details>`;
  };
  return html`${sectionsOf(lines).map(section)}`;
}
