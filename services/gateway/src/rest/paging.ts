import { DEFAULT_PER_PAGE, pageWindow } from "@conveyor/runtime";
import { type Static, Type } from "@fastify/type-provider-typebox";
import { MAX_INT32 } from "../route-declarations/params.js";

/**
 * Paging of every REST list, in one place: the query parameters' schema (checked and read as integers by Fastify
 * before any route runs, so `page=0` or `per_page=x` is a 400 naming the parameter), the page a request asks for
 * (the services' own pageWindow: defaults and the cap of 100), and the Link header of the answer.
 */

/** `page` (1-based, default 1) and `per_page` (default 30, silently capped at 100), as every list takes them. */
export const pagingProperties = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INT32, description: "1-based page, default 1" })),
  per_page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_INT32, description: "page size, default 30, capped at 100" }),
  ),
};
/** The query string of a list that takes nothing but paging. */
export const PagingQuery = Type.Object(pagingProperties);
export type PagingQueryValues = Static<typeof PagingQuery>;

/** The page a list request asks for. */
export interface PageRequest {
  page: number;
  perPage: number;
}

/** The page a list request asks for: its schema-checked `page` and `per_page`, with the lists' defaults and cap. */
export function pageOf(query: PagingQueryValues): PageRequest {
  const { page, perPage } = pageWindow(query.page, query.per_page);
  return { page, perPage };
}

/**
 * One page of a list the service answers whole (a bounded one, such as an organization's webhooks), with its `Link`
 * header set: every list takes `page` and `per_page` alike, whether the service or the gateway cuts the page.
 */
export function pageOfWhole<T>(
  items: readonly T[],
  query: PagingQueryValues,
  request: { url: string },
  reply: { header(name: string, value: string): unknown },
  publicUrl: string,
): T[] {
  const paging = pageOf(query);
  const link = linkHeader(publicUrl, request.url, paging, { total: items.length });
  if (link) reply.header("link", link);
  const start = (paging.page - 1) * paging.perPage;
  return items.slice(start, start + paging.perPage);
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
