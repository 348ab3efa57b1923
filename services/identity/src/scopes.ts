/** Every API access token scope the service knows, in the order the REST API documents them. */
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

export type Scope = (typeof ALL_SCOPES)[number];

const KNOWN = new Set<string>(ALL_SCOPES);

/** Splits requested scopes into known (deduplicated, in documented order) and unknown ones. */
export function parseScopes(requested: readonly string[]): { scopes: Scope[]; unknown: string[] } {
  const wanted = new Set(requested.map((s) => s.trim()).filter((s) => s !== ""));
  const unknown = [...wanted].filter((s) => !KNOWN.has(s));
  return { scopes: ALL_SCOPES.filter((s) => wanted.has(s)), unknown };
}
