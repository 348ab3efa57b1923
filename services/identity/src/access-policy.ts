import { Role } from "@conveyor/proto/identity";

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
