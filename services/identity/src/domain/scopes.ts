import { ALL_SCOPES } from "@conveyor/runtime";

export { ALL_SCOPES };

export type Scope = (typeof ALL_SCOPES)[number];

const KNOWN = new Set<string>(ALL_SCOPES);

/** Splits requested scopes into known (deduplicated, in documented order) and unknown ones. */
export function parseScopes(requested: readonly string[]): { scopes: Scope[]; unknown: string[] } {
  const wanted = new Set(requested.map((s) => s.trim()).filter((s) => s !== ""));
  const unknown = [...wanted].filter((s) => !KNOWN.has(s));
  return { scopes: ALL_SCOPES.filter((s) => wanted.has(s)), unknown };
}
