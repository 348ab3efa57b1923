/** What a benchmarked route needs to build its request. */
export interface BenchContext {
  orgSlug: string;
}

/** One REST route that `npm run bench` measures through the gateway, beside the hello-world baseline. */
export interface BenchRoute {
  /** The route as the REST API documents it, for the report. */
  name: string;
  method: "GET";
  /** The concrete path to request. */
  path(ctx: BenchContext): string;
}

/** The routes measured by `npm run bench`, in report order. Later features add their hot routes here. */
export const BENCH_ROUTES: readonly BenchRoute[] = [
  { name: "GET /v2/organizations/{org}", method: "GET", path: (c) => `/v2/organizations/${c.orgSlug}` },
];
