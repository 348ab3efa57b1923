import { type HtmlValue, html } from "../html.js";

/** A page's URL with another `page`, keeping its other query parameters. */
export function withPage(url: string, page: number): string {
  const u = new URL(url, "http://page.invalid");
  if (page <= 1) u.searchParams.delete("page");
  else u.searchParams.set("page", String(page));
  const search = u.searchParams.toString();
  return `${u.pathname}${search ? `?${search}` : ""}`;
}

/**
 * The previous and next links of a paged list (rel prev/next, as the REST API's Link header names them); lists of
 * builds call them newer and older.
 */
export function pagerLinks(
  url: string,
  page: number,
  hasMore: boolean,
  words: { prev: string; next: string } = { prev: "Previous", next: "Next" },
): HtmlValue {
  if (page <= 1 && !hasMore) return null;
  return html`<nav class="pager" aria-label="Pages">
  ${page > 1 ? html`<a rel="prev" href="${withPage(url, page - 1)}">← ${words.prev}</a>` : null}
  <span class="muted">Page ${page}</span>
  ${hasMore ? html`<a rel="next" href="${withPage(url, page + 1)}">${words.next} →</a>` : null}
</nav>`;
}
