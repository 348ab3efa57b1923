import { AnsiUp } from "ansi_up";
import type { AnsiToHtml } from "./log-html.js";

/**
 * A fresh ANSI-to-HTML converter for one log, over ansi_up: the 16 colours, bold, faint, italic and underline as
 * classes (styled by the pages' stylesheet), 256 and 24-bit colours as inline colours, every other character
 * escaped, and OSC 8 hyperlinks only for http and https URLs (ansi_up's allow-list; anything else is shown as text).
 */
export function createAnsiToHtml(): AnsiToHtml {
  const up = new AnsiUp();
  up.use_classes = true;
  up.escape_html = true;
  up.url_allowlist = { http: 1, https: 1 };
  const state = up as unknown as AnsiUpState;
  return {
    // Most lines of most logs carry no escape and follow a line that left no style on: ansi_up would only escape
    // them, at a good part of a large log's rendering time. ansi-html.test.ts holds the two outputs equal.
    toHtml: (text) =>
      !text.includes("\x1b") && isPlain(state) ? escapeLikeAnsiUp(text) : up.ansi_to_html(unlinkOtherSchemes(text)),
  };
}

/** ansi_up's state between calls (private in its types): the style it carries, and an escape sequence cut short. */
interface AnsiUpState {
  fg: unknown;
  bg: unknown;
  bold: boolean;
  faint: boolean;
  italic: boolean;
  underline: boolean;
  _buffer: string;
}

/** Whether ansi_up would write the next text without a style: none is on and no sequence waits for its end. */
function isPlain(s: AnsiUpState): boolean {
  return s.fg === null && s.bg === null && !s.bold && !s.faint && !s.italic && !s.underline && s._buffer === "";
}

const ANSI_UP_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#x27;",
};

/** Text escaped as ansi_up escapes it (its apostrophe is `&#x27;`). */
export function escapeLikeAnsiUp(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ANSI_UP_ESCAPES[c] as string);
}

/** An OSC 8 hyperlink: its parameters, its URL, the terminator, then its text up to the closing OSC 8. */
const OSC8 =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences are what this reads
  /\x1b\]8;[^;\x07\x1b]{0,256};([^\x07\x1b]{0,4096})(?:\x07|\x1b\\)([^\x1b]{0,4096})\x1b\]8;;(?:\x07|\x1b\\)/g;

/**
 * Keeps the text of an OSC 8 link whose URL is not http(s) and drops the link (ansi_up would drop the text too).
 */
export function unlinkOtherSchemes(text: string): string {
  if (!text.includes("\x1b]8;")) return text;
  return text.replace(OSC8, (whole, url: string, label: string) => (/^https?:\/\//i.test(url) ? whole : label));
}
