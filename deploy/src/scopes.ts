/**
 * Every API access token scope, in the order the REST API documents them. The bootstrap token gets all of them.
 * This list is kept identical to services/identity/src/scopes.ts (a unit test compares the two files).
 */
export const ALL_SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_artifacts",
  "write_artifacts",
  "read_organizations",
  "view_teams",
  "write_teams",
  "read_rules",
  "write_rules",
  "read_registries",
  "write_registries",
  "read_agents",
  "write_agents",
  "read_clusters",
  "write_clusters",
] as const;
