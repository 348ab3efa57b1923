/**
 * HTML for the pages, built with one tagged template that escapes every interpolated value: a page cannot show a
 * user's text (a pipeline name, a branch, a log line) unescaped unless the code says so with `trusted()`, which only
 * takes HTML this code made or sanitised (annotation HTML, rendered logs). Arrays are joined, null and undefined and
 * false render nothing, numbers render as text.
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** HTML that is safe to insert as it is: made by `html`, or declared trusted. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** What a page template may interpolate. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

/** Marks HTML made or sanitised by this code as safe to insert unescaped. Never for a user's text. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false || value === true) return "";
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** The tagged template: `html\`<p>${name}</p>\`` escapes `name`. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += render(values[i] as HtmlValue) + (strings[i + 1] ?? "");
  return new SafeHtml(out);
}
