/** Default and maximum page sizes of every list, as the REST API documents them. */
export const DEFAULT_PER_PAGE = 30;
export const MAX_PER_PAGE = 100;

export interface PageWindow {
  page: number;
  perPage: number;
  skip: number;
}

/**
 * The one page window of every list: the services page with it, and the gateway reads `page` and `per_page` with it
 * (pageOf, services/gateway/src/rest/paging.ts). Page 0 or less means 1; per_page 0 means 30 and is capped at 100.
 */
export function pageWindow(page: number | undefined, perPage: number | undefined): PageWindow {
  const p = page && page > 0 ? Math.floor(page) : 1;
  const size = perPage && perPage > 0 ? Math.min(Math.floor(perPage), MAX_PER_PAGE) : DEFAULT_PER_PAGE;
  return { page: p, perPage: size, skip: (p - 1) * size };
}
