/**
 * The paths of the pages, as the REST API's web_url fields name them (render/urls.ts adds WEB_URL in front), relative
 * to the pages' origin. Every segment is URL-encoded, though the services only make URL-safe slugs and ids. The
 * build page's own paths (a job's anchor, its log) are in pages/build-paths.ts.
 */
const seg = encodeURIComponent;

/** An organization's page, its pipelines: `/{org}`. */
export function orgPath(org: string): string {
  return `/${seg(org)}`;
}

/** A pipeline's page, its builds: `/{org}/{pipeline}`. */
export function pipelinePath(org: string, pipeline: string): string {
  return `/${seg(org)}/${seg(pipeline)}`;
}

/** A build's page: `/{org}/{pipeline}/builds/{number}`. */
export function buildPath(org: string, pipeline: string, number: number): string {
  return `${pipelinePath(org, pipeline)}/builds/${number}`;
}

/** An organization's agents: `/organizations/{org}/agents`. */
export function agentsPath(org: string): string {
  return `/organizations/${seg(org)}/agents`;
}

/** An agent's page: `/organizations/{org}/agents/{id}`. */
export function agentPath(org: string, agentId: string): string {
  return `${agentsPath(org)}/${seg(agentId)}`;
}

/** Where a signed-out person is sent to sign in, coming back to `next` (a path of this site) afterwards. */
export function signInPath(next: string): string {
  return `/login?next=${seg(next)}`;
}
