import { PipelineAccessLevel, Role, TeamMemberRole, TeamPrivacy } from "@conveyor/proto/identity";

/** A membership as the policy sees it. */
export interface MembershipFact {
  organizationId: string;
  role: Role;
}

/**
 * The organizations a token may act in: the user's memberships, narrowed to the token's organization allow-list
 * when it has one. This is the single place that decides organization reach; everything else asks it.
 */
export function reachableOrganizations(
  memberships: readonly MembershipFact[],
  tokenOrganizationIds: readonly string[],
): MembershipFact[] {
  if (tokenOrganizationIds.length === 0) return [...memberships];
  const allowed = new Set(tokenOrganizationIds);
  return memberships.filter((m) => allowed.has(m.organizationId));
}

/** The role stored for a requested role: unspecified means member. */
export function effectiveRole(role: Role): Role {
  return role === Role.ADMIN ? Role.ADMIN : Role.MEMBER;
}

/** Something a user may want to do with a pipeline or its builds. */
export type PipelineAction = "read" | "build" | "edit";

/** What each pipeline access level allows; levels grow, each allows what the one before it does. */
const LEVEL_ALLOWS: Record<PipelineAccessLevel, Record<PipelineAction, boolean>> = {
  [PipelineAccessLevel.UNSPECIFIED]: { read: false, build: false, edit: false },
  [PipelineAccessLevel.READ_ONLY]: { read: true, build: false, edit: false },
  [PipelineAccessLevel.BUILD_AND_READ]: { read: true, build: true, edit: false },
  [PipelineAccessLevel.MANAGE_BUILD_AND_READ]: { read: true, build: true, edit: true },
};

/** The access a level grants on one pipeline (or, with no id, on every pipeline of an organization). */
export function accessOfLevel(level: PipelineAccessLevel, pipelineId = "") {
  return { pipelineId, level, ...LEVEL_ALLOWS[level] };
}

/** The highest of some levels; none is UNSPECIFIED (no access). */
export function highestLevel(levels: Iterable<PipelineAccessLevel>): PipelineAccessLevel {
  let best = PipelineAccessLevel.UNSPECIFIED;
  for (const level of levels) if (level > best) best = level;
  return best;
}

/**
 * The access a user has to every pipeline of an organization when it does not depend on teams: administrators may
 * do everything; with teams disabled, members may read and build but not edit (edits are for administrators).
 * Undefined when teams decide, which is for non-administrators of an organization with teams enabled.
 */
export function organizationPipelineAccess(role: Role, teamsEnabled: boolean): PipelineAccessLevel | undefined {
  if (role === Role.ADMIN) return PipelineAccessLevel.MANAGE_BUILD_AND_READ;
  if (role !== Role.MEMBER) return PipelineAccessLevel.UNSPECIFIED;
  return teamsEnabled ? undefined : PipelineAccessLevel.BUILD_AND_READ;
}

/** One team's grant on a pipeline, and the user's role in that team. */
export interface PipelineGrant {
  level: PipelineAccessLevel;
  teamRole: TeamMemberRole;
}

/**
 * The level a user has on one pipeline: the organization-wide access when that applies, otherwise the highest
 * level any of the user's teams grants on it, or none. A team maintainer gets no more than the team's level: the
 * maintainer role is for managing the team, not for the team's pipelines.
 */
export function pipelineAccessLevel(
  role: Role,
  teamsEnabled: boolean,
  grants: readonly PipelineGrant[],
): PipelineAccessLevel {
  return organizationPipelineAccess(role, teamsEnabled) ?? highestLevel(grants.map((g) => g.level));
}

/** Who is asking, as far as the team and organization rules care. */
export type Actor =
  /** An operator tool (ci-admin), which acts with full authority. */
  | { kind: "operator" }
  /** A user with a role in the organization (UNSPECIFIED when not a member) and, where it matters, in the team. */
  | { kind: "user"; role: Role; teamRole?: TeamMemberRole };

export const isTeamMember = (actor: Actor) =>
  actor.kind === "user" && actor.teamRole !== undefined && actor.teamRole !== TeamMemberRole.UNSPECIFIED;

/** Whether the actor may see a team: visible teams to every member, secret ones to administrators and members. */
export function canSeeTeam(actor: Actor, privacy: TeamPrivacy): boolean {
  if (actor.kind === "operator" || actor.role === Role.ADMIN) return true;
  if (actor.role !== Role.MEMBER) return false;
  return privacy !== TeamPrivacy.SECRET || isTeamMember(actor);
}

/** Whether the actor may change a team's members, pipelines and suites: administrators and team maintainers. */
export function canManageTeam(actor: Actor): boolean {
  if (actor.kind === "operator" || actor.role === Role.ADMIN) return true;
  return actor.role === Role.MEMBER && actor.teamRole === TeamMemberRole.MAINTAINER;
}

/**
 * Whether the actor may give a new pipeline to a team when creating it: administrators any team of the
 * organization, its maintainers, and its other members when the team lets members create pipelines
 * (`members_can_create_pipelines`, true for teams stored before the setting).
 */
export function canGivePipelineToTeam(actor: Actor, membersCanCreatePipelines = true): boolean {
  if (actor.kind === "operator" || actor.role === Role.ADMIN) return true;
  if (actor.role !== Role.MEMBER || !isTeamMember(actor)) return false;
  return actor.teamRole === TeamMemberRole.MAINTAINER || membersCanCreatePipelines;
}

/** Whether the actor may create a team in the organization: administrators (and operator tools). */
export function canCreateTeam(actor: Actor): boolean {
  return actor.kind === "operator" || actor.role === Role.ADMIN;
}

/** Whether the actor may create and delete rules, and create, change and delete registry tokens. */
export function canManageOrganizationSettings(actor: Actor): boolean {
  return actor.kind === "operator" || actor.role === Role.ADMIN;
}
