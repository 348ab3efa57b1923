/**
 * The identity service's stored documents as proto messages: users, organizations, memberships, access tokens and
 * sessions.
 */

import { Role } from "@conveyor/proto/identity";
import { toTimestamp } from "@conveyor/runtime";
import type { MembershipDoc, OrganizationDoc, RoleName, TokenDoc, UserDoc } from "../store/identity-repository.js";
import type { SessionDoc } from "../store/session-repository.js";

/** The User message of a stored user. */
export const userMessage = (u: UserDoc) => ({
  id: u._id,
  name: u.name,
  email: u.email,
  avatarUrl: u.avatarUrl ?? "",
  createdAt: toTimestamp(u.createdAt),
});

/** The Organization message of a stored organization. */
export const organizationMessage = (o: OrganizationDoc) => ({
  id: o._id,
  slug: o.slug,
  name: o.name,
  teamsEnabled: o.teamsEnabled,
  createdAt: toTimestamp(o.createdAt),
});

/** The proto role of a stored organization role. */
export const roleOf = (name: RoleName): Role => (name === "admin" ? Role.ADMIN : Role.MEMBER);

/** The Membership message of a stored membership. */
export const membershipMessage = (m: MembershipDoc) => ({
  organizationId: m.organizationId,
  userId: m.userId,
  role: roleOf(m.role),
  createdAt: toTimestamp(m.createdAt),
});

/** The AccessToken message of a stored token (never its secret). */
export const tokenMessage = (t: TokenDoc) => ({
  id: t._id,
  userId: t.userId,
  scopes: t.scopes,
  organizationIds: t.organizationIds,
  description: t.description,
  createdAt: toTimestamp(t.createdAt),
  revokedAt: toTimestamp(t.revokedAt),
});

/** The Session message of a stored session (never its secret). */
export const sessionMessage = (s: SessionDoc) => ({
  id: s._id,
  userId: s.userId,
  createdAt: toTimestamp(s.createdAt),
  lastSeenAt: toTimestamp(s.lastSeenAt),
  idleExpiresAt: toTimestamp(s.idleExpiresAt),
  expiresAt: toTimestamp(s.expiresAt),
});
