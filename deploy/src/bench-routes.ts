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
}

/** The routes measured by `npm run bench`, in report order. Later features add their hot routes here. */
export const BENCH_ROUTES: readonly BenchRoute[] = [
  { name: "GET /v2/organizations/{org}", method: "GET", path: (c) => `/v2/organizations/${c.orgSlug}` },
  {
    name: "GET …/pipelines/{pipeline}",
    method: "GET",
    path: (c) => c.pipelineSlug && `/v2/organizations/${c.orgSlug}/pipelines/${c.pipelineSlug}`,
  },
  {
    name: "GET …/pipelines/{pipeline}/builds",
    method: "GET",
    path: (c) => c.pipelineSlug && `/v2/organizations/${c.orgSlug}/pipelines/${c.pipelineSlug}/builds?per_page=10`,
  },
  {
    name: "GET …/builds/{number}",
    method: "GET",
    path: (c) => c.pipelineSlug && `/v2/organizations/${c.orgSlug}/pipelines/${c.pipelineSlug}/builds/1`,
  },
];

/**
 * Finds a pipeline of the organization that has build number 1, or makes one (with a cluster, when the agents
 * service can be reached) and gives it a build; undefined when neither is possible.
 */
export async function ensureBenchPipeline(
  apiUrl: string,
  token: string,
  orgSlug: string,
  createCluster?: () => Promise<string>,
): Promise<string | undefined> {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const base = `${apiUrl}/v2/organizations/${orgSlug}/pipelines`;
  const list = (await (await fetch(`${base}?per_page=100`, { headers })).json()) as Array<{ slug: string }>;
  for (const p of Array.isArray(list) ? list : []) {
    if ((await fetch(`${base}/${p.slug}/builds/1`, { headers })).status === 200) return p.slug;
  }
  if (!createCluster) return undefined;
  const created = await fetch(base, {
    method: "POST",
    headers,
    body: JSON.stringify({
      name: `Bench ${Date.now()}`,
      repository: "https://example.com/bench.git",
      cluster_id: await createCluster(),
      configuration: "steps:\n  - command: make test\n  - wait\n  - command: make deploy\n",
    }),
  });
  if (created.status !== 201) return undefined;
  const { slug } = (await created.json()) as { slug: string };
  await fetch(`${base}/${slug}/builds`, {
    method: "POST",
    headers,
    body: JSON.stringify({ commit: "HEAD", branch: "main" }),
  });
  return slug;
}
