/**
 * Who may unblock a block or input step (Buildkite's block step `allowed_teams`): when the step names teams, only a
 * member of one of them, whatever their access to the pipeline (a member of an allowed team who may only read the
 * pipeline may unblock it; one who may build it but is in none of the teams may not); otherwise anyone who may build
 * the pipeline. Teams are named by slug or UUID, compared without regard to case or surrounding spaces. The builds
 * service decides an unblock with it, and the gateway's build page whether to show the step's form.
 */

/** What the caller brings: the UUIDs and slugs of their teams in the organization, and whether they may build. */
export interface Unblocker {
  teams: readonly string[];
  readOnly: boolean;
}

const normalized = (name: string) => name.trim().toLowerCase();

/** Whether the caller may unblock a step with these `allowed_teams` (absent or empty: no team restriction). */
export function mayUnblock(allowedTeams: readonly string[] | undefined, caller: Unblocker): boolean {
  const allowed = (allowedTeams ?? []).map(normalized).filter((name) => name !== "");
  if (allowed.length === 0) return !caller.readOnly;
  const mine = new Set(caller.teams.map(normalized));
  return allowed.some((name) => mine.has(name));
}
