import {
  DuplicateError,
  type IdentityRepository,
  type MembershipDoc,
  type OrganizationDoc,
  type TokenDoc,
  type UserDoc,
} from "./identity-repository.js";

/** Binary string order, as MongoDB sorts without a collation. */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** An in-memory IdentityRepository with the same unique rules as the MongoDB one, for unit tests. */
export function createMemoryIdentityRepository(): IdentityRepository {
  const users = new Map<string, UserDoc>();
  const orgs = new Map<string, OrganizationDoc>();
  const memberships = new Map<string, MembershipDoc>();
  const tokens = new Map<string, TokenDoc>();
  const copy = <T>(v: T): T => structuredClone(v);
  const page = <T>(items: T[], skip: number, limit: number) => ({
    items: items.slice(skip, skip + limit).map(copy),
    total: items.length,
  });
  return {
    async insertUser(user) {
      if ([...users.values()].some((u) => u.email === user.email)) throw new DuplicateError("email");
      users.set(user._id, copy(user));
    },
    findUser: async (id) => copy(users.get(id) ?? null),
    findUserByEmail: async (email) => copy([...users.values()].find((u) => u.email === email) ?? null),
    findUsers: async (ids) => ids.flatMap((id) => (users.has(id) ? [copy(users.get(id) as UserDoc)] : [])),
    async insertOrganization(org) {
      if ([...orgs.values()].some((o) => o.slug === org.slug)) throw new DuplicateError("slug");
      orgs.set(org._id, copy(org));
    },
    findOrganization: async (by) =>
      copy((by.id ? orgs.get(by.id) : [...orgs.values()].find((o) => o.slug === by.slug)) ?? null),
    findOrganizations: async (ids) =>
      ids.flatMap((id) => (orgs.has(id) ? [copy(orgs.get(id) as OrganizationDoc)] : [])),
    async listOrganizations(ids, skip, limit) {
      const wanted = new Set(ids);
      const sorted = [...orgs.values()]
        .filter((o) => wanted.has(o._id))
        .sort((a, b) => cmp(a.name, b.name) || cmp(a._id, b._id));
      return page(sorted, skip, limit);
    },
    async upsertMembership(m) {
      const existing = memberships.get(m._id);
      const stored = existing ? { ...existing, role: m.role, userName: m.userName } : copy(m);
      memberships.set(m._id, stored);
      return copy(stored);
    },
    findMembership: async (organizationId, userId) => copy(memberships.get(`${organizationId}:${userId}`) ?? null),
    membershipsOfUser: async (userId) => [...memberships.values()].filter((m) => m.userId === userId).map(copy),
    async listMemberships(organizationId, skip, limit) {
      const sorted = [...memberships.values()]
        .filter((m) => m.organizationId === organizationId)
        .sort((a, b) => cmp(a.userName, b.userName) || cmp(a.userId, b.userId));
      return page(sorted, skip, limit);
    },
    async insertToken(token) {
      tokens.set(token._id, copy(token));
    },
    findTokenByHash: async (hash) => copy([...tokens.values()].find((t) => t.hash === hash) ?? null),
    findToken: async (id) => copy(tokens.get(id) ?? null),
    async revokeToken(id, at) {
      const token = tokens.get(id);
      if (token && !token.revokedAt) token.revokedAt = at;
      return copy(token ?? null);
    },
  };
}
