/** What a benchmarked route needs to build its request. */
export interface BenchContext {
  orgSlug: string;
  /** A pipeline of the organization with at least one build, when there is one (see ensureBenchPipeline). */
  pipelineSlug?: string;
}

/** One REST route that `npm run bench` measures through the gateway, beside the hello-world baseline. */
export interface BenchRoute {
  /** The route as the REST API documents it, for the report. */
  name: string;
  method: "GET";
  /** The concrete path to request, or undefined when the context lacks what the route needs. */
  path(ctx: BenchContext): string | undefined;
  /** Sent with If-None-Match naming the current answer, as a poller that keeps ETags does (304 expected). */
  conditional?: boolean;
  /** Sent with `Accept-Encoding: gzip`, as Go's HTTP client (go-buildkite, the `bk` CLI) sends it by default. */
  gzip?: boolean;
}

/** Builds the bench pipeline holds, each with three jobs, so that a page of 30 builds is a full page. */
export const BENCH_BUILDS = 40;

/** The bench pipeline's steps: three jobs per build (a command, a wait, a command), on a queue no agent serves. */
const BENCH_CONFIGURATION =
  "steps:\n  - command: make test\n    agents: {queue: bench-idle}\n  - wait\n  - command: make deploy\n    agents: {queue: bench-idle}\n";

/** The bench pipeline's path under the organization, and its first build and first page of 30. */
const pipelinePath = (c: BenchContext) =>
  c.pipelineSlug && `/v2/organizations/${c.orgSlug}/pipelines/${c.pipelineSlug}`;
const buildPath = (c: BenchContext) => c.pipelineSlug && `${pipelinePath(c)}/builds/1`;
/** The bench pipeline's first page of 30 builds (empty when the bench made no pipeline). */
export const pagePath = (c: BenchContext) => c.pipelineSlug && `${pipelinePath(c)}/builds?per_page=30`;

/** The routes measured by `npm run bench`, in report order. Later features add their hot routes here. */
export const BENCH_ROUTES: readonly BenchRoute[] = [
  { name: "GET /v2/organizations/{org}", method: "GET", path: (c) => `/v2/organizations/${c.orgSlug}` },
  { name: "GET …/pipelines/{pipeline}", method: "GET", path: pipelinePath },
  { name: "GET …/builds/{number} (3 jobs)", method: "GET", path: buildPath },
  { name: "GET …/pipelines/{p}/builds (30)", method: "GET", path: pagePath },
  { name: "GET …/builds/{number} gzip (Go clients)", method: "GET", path: buildPath, gzip: true },
  { name: "GET …/pipelines/{p}/builds (30) gzip", method: "GET", path: pagePath, gzip: true },
  { name: "GET …/builds/{n} If-None-Match", method: "GET", path: buildPath, conditional: true },
  { name: "GET …/builds (30) If-None-Match", method: "GET", path: pagePath, conditional: true },
];

/**
 * Finds the organization's bench pipeline (its name starts with "Bench"), or makes one (with a cluster, when the
 * agents service can be reached), and tops it up to BENCH_BUILDS builds of three jobs; undefined when neither is
 * possible.
 */
export async function ensureBenchPipeline(
  apiUrl: string,
  token: string,
  orgSlug: string,
  createCluster?: () => Promise<string>,
): Promise<string | undefined> {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const base = `${apiUrl}/v2/organizations/${orgSlug}/pipelines`;
  const list = (await (await fetch(`${base}?per_page=100`, { headers })).json()) as Array<{
    slug: string;
    name: string;
  }>;
  let slug = (Array.isArray(list) ? list : []).find((p) => p.name.startsWith("Bench"))?.slug;
  if (!slug) {
    if (!createCluster) return undefined;
    const created = await fetch(base, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: `Bench ${Date.now()}`,
        repository: "https://example.com/bench.git",
        cluster_id: await createCluster(),
        configuration: BENCH_CONFIGURATION,
      }),
    });
    if (created.status !== 201) return undefined;
    slug = ((await created.json()) as { slug: string }).slug;
  }
  const existing = (await (await fetch(`${base}/${slug}/builds?per_page=100`, { headers })).json()) as unknown[];
  for (let n = Array.isArray(existing) ? existing.length : 0; n < BENCH_BUILDS; n++) {
    await fetch(`${base}/${slug}/builds`, {
      method: "POST",
      headers,
      body: JSON.stringify({ commit: "HEAD", branch: "main", message: `bench build ${n + 1}` }),
    });
  }
  return slug;
}
