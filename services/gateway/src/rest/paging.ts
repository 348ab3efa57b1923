import { DEFAULT_PER_PAGE, MAX_PER_PAGE } from "@conveyor/runtime";
import { HttpError } from "../errors/http-error.js";

export interface PageRequest {
  page: number;
  perPage: number;
}

/** The JSON schema of the paging query parameters every list route accepts. */
export const pagingQuerySchema = {
  page: { type: "string" },
  per_page: { type: "string" },
} as const;

/** Parses `page` (default 1) and `per_page` (default 30, silently capped at 100); garbage is a 400. */
export function parsePaging(query: { page?: string; per_page?: string }): PageRequest {
  const num = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined || raw === "") return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < 1)
      throw new HttpError(400, `${name} must be a positive integer, got "${raw}"`);
    return Number(raw);
  };
  return {
    page: num("page", query.page, 1),
    perPage: Math.min(num("per_page", query.per_page, DEFAULT_PER_PAGE), MAX_PER_PAGE),
  };
}

/**
 * The value of the one `Link` header of a page, or undefined when everything fits on one page. Every URL is
 * absolute, keeps the request's other query parameters, and always carries an explicit `page=N`, as go-buildkite
 * parses it. Without a total, `hasMore` decides whether there is a next page and `last` is left out.
 */
export function linkHeader(
  publicUrl: string,
  requestUrl: string,
  paging: PageRequest,
  size: { total: number } | { hasMore: boolean },
): string | undefined {
  const last = "total" in size ? Math.max(1, Math.ceil(size.total / paging.perPage)) : undefined;
  const hasNext = "total" in size ? paging.page < (last ?? 1) : size.hasMore;
  const hasPrev = paging.page > 1;
  if (!hasNext && !hasPrev) return undefined;
  const base = new URL(requestUrl, `${publicUrl}/`);
  const at = (page: number) => {
    const url = new URL(base);
    url.searchParams.set("page", String(page));
    if (!url.searchParams.has("per_page") && paging.perPage !== DEFAULT_PER_PAGE) {
      url.searchParams.set("per_page", String(paging.perPage));
    }
    return `${new URL(publicUrl).origin}${new URL(publicUrl).pathname.replace(/\/$/, "")}${url.pathname}?${url.searchParams.toString()}`;
  };
  const links: string[] = [];
  if (hasNext) links.push(`<${at(paging.page + 1)}>; rel="next"`);
  if (hasPrev) links.push(`<${at(paging.page - 1)}>; rel="prev"`);
  links.push(`<${at(1)}>; rel="first"`);
  if (last !== undefined) links.push(`<${at(Math.max(last, 1))}>; rel="last"`);
  return links.join(", ");
}
