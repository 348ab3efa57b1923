import type { FastifyInstance } from "fastify";
import type { RouteDeps } from "./route-deps.js";
import { teamMemberRoutes } from "./team-members.js";
import { teamPipelineRoutes } from "./team-pipelines.js";
import { teamRecordRoutes } from "./team-records.js";
import { teamSuiteRoutes } from "./team-suites.js";

/**
 * The team routes: the teams themselves (team-records.ts), and their associations: team members, team pipelines and team suites, each with both path spellings that
 * clients use (Buildkite's documented trailing slashes and go-buildkite's forms; docs/compatibility.md#teams). Identity decides who may see and change a team.
 */
export function teamRoutes(app: FastifyInstance, deps: RouteDeps): void {
  teamRecordRoutes(app, deps);
  teamMemberRoutes(app, deps);
  teamPipelineRoutes(app, deps);
  teamSuiteRoutes(app, deps);
}
