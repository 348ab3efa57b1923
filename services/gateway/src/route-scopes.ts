/**
 * The scope every REST route requires, in one table keyed "<METHOD> <fastify route path>".
 * The app refuses to start if a /v2 route is missing here, and a test checks the table has no stale rows.
 * `null` marks a route any valid token may call.
 */
export const ROUTE_SCOPES: Readonly<Record<string, string | null>> = {
  "GET /v2/access-token": null,
  "DELETE /v2/access-token": null,
  "GET /v2/organizations": "read_organizations",
  "GET /v2/organizations/:org": "read_organizations",
  "GET /v2/organizations/:org/members": "read_organizations",
  "GET /v2/organizations/:org/members/:user": "read_organizations",
  "GET /v2/organizations/:org/pipelines": "read_pipelines",
  "GET /v2/organizations/:org/pipelines/:slug": "read_pipelines",
  "POST /v2/organizations/:org/pipelines": "write_pipelines",
  "PATCH /v2/organizations/:org/pipelines/:slug": "write_pipelines",
  "POST /v2/organizations/:org/pipelines/:slug/archive": "write_pipelines",
  "POST /v2/organizations/:org/pipelines/:slug/unarchive": "write_pipelines",
  "DELETE /v2/organizations/:org/pipelines/:slug": "write_pipelines",
  "GET /v2/builds": "read_builds",
  "GET /v2/organizations/:org/builds": "read_builds",
  "GET /v2/organizations/:org/pipelines/:pipeline/builds": "read_builds",
  "GET /v2/organizations/:org/pipelines/:pipeline/builds/:number": "read_builds",
  "POST /v2/organizations/:org/pipelines/:pipeline/builds": "write_builds",
  "PUT /v2/organizations/:org/pipelines/:pipeline/builds/:number/cancel": "write_builds",
  "PUT /v2/organizations/:org/pipelines/:pipeline/builds/:number/rebuild": "write_builds",
};

/** The key of a route in ROUTE_SCOPES. */
export function routeKey(method: string, url: string): string {
  return `${method.toUpperCase()} ${url}`;
}
