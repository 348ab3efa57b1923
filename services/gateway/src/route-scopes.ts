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
  "GET /v2/organizations/:org/teams/:team/members": "view_teams",
  "GET /v2/organizations/:org/teams/:team/members/:user": "view_teams",
  "POST /v2/organizations/:org/teams/:team/members": "write_teams",
  "POST /v2/organizations/:org/teams/:team/members/": "write_teams",
  "PATCH /v2/organizations/:org/teams/:team/members/:user": "write_teams",
  "DELETE /v2/organizations/:org/teams/:team/members/:user": "write_teams",
  "GET /v2/organizations/:org/teams/:team/pipelines": "view_teams",
  "GET /v2/organizations/:org/teams/:team/pipelines/:pipeline": "view_teams",
  "POST /v2/organizations/:org/teams/:team/pipelines": "write_teams",
  "POST /v2/organizations/:org/teams/:team/pipelines/": "write_teams",
  "PATCH /v2/organizations/:org/teams/:team/pipelines/:pipeline": "write_teams",
  "DELETE /v2/organizations/:org/teams/:team/pipelines/:pipeline": "write_teams",
  "DELETE /v2/organizations/:org/teams/:team/pipelines/": "write_teams",
  "GET /v2/organizations/:org/teams/:team/suites": "view_teams",
  "GET /v2/organizations/:org/teams/:team/suites/:suite": "view_teams",
  "POST /v2/organizations/:org/teams/:team/suite": "write_teams",
  "POST /v2/organizations/:org/teams/:team/suite/": "write_teams",
  "POST /v2/organizations/:org/teams/:team/suites": "write_teams",
  "POST /v2/organizations/:org/teams/:team/suites/": "write_teams",
  "PATCH /v2/organizations/:org/teams/:team/suites/:suite": "write_teams",
  "DELETE /v2/organizations/:org/teams/:team/suites/:suite": "write_teams",
  "DELETE /v2/organizations/:org/teams/:team/suites/:suite/": "write_teams",
  "GET /v2/organizations/:org/rules": "read_rules",
  "GET /v2/organizations/:org/rules/:rule": "read_rules",
  "POST /v2/organizations/:org/rules": "write_rules",
  "DELETE /v2/organizations/:org/rules/:rule": "write_rules",
  "GET /v2/packages/organizations/:org/registries/:registry/tokens": "read_registries",
  "GET /v2/packages/organizations/:org/registries/:registry/tokens/:token": "read_registries",
  "POST /v2/packages/organizations/:org/registries/:registry/tokens": "write_registries",
  "POST /v2/packages/organizations/:org/registries/:registry/tokens/:token": "write_registries",
  "DELETE /v2/packages/organizations/:org/registries/:registry/tokens/:token": "write_registries",
};

/** The key of a route in ROUTE_SCOPES. */
export function routeKey(method: string, url: string): string {
  return `${method.toUpperCase()} ${url}`;
}
