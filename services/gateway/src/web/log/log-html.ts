import { type SafeHtml, trusted } from "../html.js";
import type { LogLine } from "./log-lines.js";
import { planOf, type SectionPlan } from "./log-sections.js";

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
function timeOf(at: number | null): string {
  if (at === null) return "";
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return "";
  // Made of digits and the ISO form's letters only: nothing to escape.
  return `<time datetime="${d.toISOString()}">${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}</time>`;
}

/**
 * One line as HTML: a span with its anchor (`L<byte offset>`), its number when it has one, its time and its text
 * (a group header's title for a header). `ansi` carries styles from the line before, so lines go through it in log
 * order. Live updates render appended lines with it.
 *
 * This is the one place HTML is joined as strings rather than with `html`: a log has millions of lines, and the
 * template's per-value work was most of a large log's rendering time. Every part is a number, a time made above, or
 * the converter's escaped output, so nothing a person wrote is inserted unescaped.
 */
export function renderLogLine(line: LogLine, ansi: AnsiToHtml, number?: number): SafeHtml {
  const offset = String(line.offset);
  const header = line.header !== undefined;
  // A header line is its group's <summary>, which toggles the group: a link inside it would be an interactive
  // element inside another (people with a keyboard or a screen reader could not tell them apart). Its anchor still
  // works (its id); only the number is not a link.
  const link = header
    ? `<span class="n">${number === undefined ? "" : String(number)}</span>`
    : number === undefined
      ? `<a class="n" href="#L${offset}" aria-label="Link to this line"></a>`
      : `<a class="n" href="#L${offset}">${String(number)}</a>`;
  const text = ansi.toHtml(header ? (line.header?.title ?? "") : line.text);
  return trusted(
    `<span class="${header ? "l h" : "l"}" id="L${offset}">${link}${timeOf(line.at)}<span class="t">${text}</span></span>`,
  );
}

/** Renders a log's lines one at a time, in log order, opening and closing its groups as their headers come. */
export interface LogRenderer {
  /** The HTML that `line` adds (a header closes the group before it and opens its own). */
  line(line: LogLine): string;
  /** The HTML that closes the last group. */
  end(): string;
}

/**
 * A renderer whose groups are open as `plan` says: a group is a <details> (its header the summary), lines before
 * the first header a <div class="s">. Numbers count every line given, markers (`^^^ +++`) included.
 */
export function createLogRenderer(plan: SectionPlan, opts: LogHtmlOptions): LogRenderer {
  let close = "";
  let headers = 0;
  let count = 0;
  return {
    line(line) {
      const number = opts.firstLineNumber === undefined ? undefined : opts.firstLineNumber + count;
      count++;
      if (line.header) {
        const open = plan.isOpen(headers++, line.header.kind) ? " open" : "";
        const before = close;
        close = "</details>";
        const summary = renderLogLine(line, opts.ansi, number).value;
        return `${before}<details class="g ${line.header.kind}"${open}><summary>${summary}</summary>`;
      }
      if (line.expandsPrevious) return "";
      let before = "";
      if (close === "") {
        before = '<div class="s">';
        close = "</div>";
      }
      return before + renderLogLine(line, opts.ansi, number).value;
    },
    end() {
      const last = close;
      close = "";
      return last;
    },
  };
}

/** Renders lines held in memory (a tail, a fragment) into sections of HTML, open by Buildkite's rules. */
export function renderLogHtml(lines: readonly LogLine[], opts: LogHtmlOptions): SafeHtml {
  const renderer = createLogRenderer(planOf(lines), opts);
  let out = "";
  for (const line of lines) out += renderer.line(line);
  return trusted(out + renderer.end());
}

/**
 * Renders lines read in batches (a whole log streamed) as pieces of HTML, one per batch, so that what is held is a
 * batch, never the log. The plan comes from a first read of the same lines.
 */
export async function* renderLogStream(
  batches: AsyncIterable<readonly LogLine[]>,
  plan: SectionPlan,
  opts: LogHtmlOptions,
): AsyncGenerator<string> {
  const renderer = createLogRenderer(plan, opts);
  for await (const batch of batches) {
    let out = "";
    for (const line of batch) out += renderer.line(line);
    if (out !== "") yield out;
  }
  const end = renderer.end();
  if (end !== "") yield end;
}
