import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type IdentityService,
  MembershipChangedSchema,
  OrganizationCreatedSchema,
  Role,
  TokenRevokedSchema,
  UserCreatedSchema,
} from "@conveyor/proto/identity";
import {
  alreadyExists,
  type EventPublisher,
  hashSecret,
  invalidFields,
  isUuid,
  newId,
  newSecret,
  notFound,
  pageWindow,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { accessOfLevel, effectiveRole, organizationPipelineAccess, reachableOrganizations } from "./access-policy.js";
import {
  DuplicateError,
  type IdentityRepository,
  type MembershipDoc,
  type OrganizationDoc,
  type RoleName,
  type TokenDoc,
  type UserDoc,
} from "./identity-repository.js";
import { requireOrganization as requireOrganizationIn } from "./organization-records.js";
import { parseScopes } from "./scopes.js";
import { deriveSlug, slugProblem } from "./slug.js";

/** Prefix of API access token secrets, as Buildkite's user access tokens have. */
export const ACCESS_TOKEN_PREFIX = "bkua_";

const EMAIL_RE = /^[^\s@]+@[^\s@]+$/;

export interface IdentityServiceDeps {
  repo: IdentityRepository;
  events: EventPublisher;
  now?: () => Date;
}

/** The User message of a stored user. */
export const userMessage = (u: UserDoc) => ({
  id: u._id,
  name: u.name,
  email: u.email,
  avatarUrl: u.avatarUrl ?? "",
  createdAt: toTimestamp(u.createdAt),
});

const orgMessage = (o: OrganizationDoc) => ({
  id: o._id,
  slug: o.slug,
  name: o.name,
  teamsEnabled: o.teamsEnabled,
  createdAt: toTimestamp(o.createdAt),
});

const roleOf = (name: RoleName): Role => (name === "admin" ? Role.ADMIN : Role.MEMBER);

const membershipMessage = (m: MembershipDoc) => ({
  organizationId: m.organizationId,
  userId: m.userId,
  role: roleOf(m.role),
  createdAt: toTimestamp(m.createdAt),
});

const tokenMessage = (t: TokenDoc) => ({
  id: t._id,
  userId: t.userId,
  scopes: t.scopes,
  organizationIds: t.organizationIds,
  description: t.description,
  createdAt: toTimestamp(t.createdAt),
  revokedAt: toTimestamp(t.revokedAt),
});

/** The identity service: users, organizations, memberships and API access tokens. */
export function createIdentityService(deps: IdentityServiceDeps): ServiceImpl<typeof IdentityService> {
  const { repo, events } = deps;
  const now = deps.now ?? (() => new Date());

  const requireUser = async (id: string): Promise<UserDoc> => {
    const user = isUuid(id) ? await repo.findUser(id) : null;
    if (!user) throw notFound("user");
    return user;
  };

  const requireOrganization = (idOrSlug: string) => requireOrganizationIn(repo, idOrSlug);

  const unauthenticated = () => new ConnectError("invalid or revoked access token", Code.Unauthenticated);

  return {
    async createUser(req) {
      const name = req.name.trim();
      const email = req.email.trim().toLowerCase();
      const problems = [];
      if (name === "") problems.push({ field: "name", code: "can't be blank" });
      if (!EMAIL_RE.test(email)) problems.push({ field: "email", code: "is not a valid email address" });
      if (problems.length > 0) throw invalidFields(problems);
      const user: UserDoc = { _id: newId(), name, email, avatarUrl: null, createdAt: now() };
      try {
        await repo.insertUser(user);
      } catch (err) {
        if (err instanceof DuplicateError) throw alreadyExists("email", "has already been taken", err);
        throw err;
      }
      await events.publish(SUBJECTS.identity.userCreated, UserCreatedSchema, { user: userMessage(user) });
      return { user: userMessage(user) };
    },

    async getUser(req) {
      return { user: userMessage(await requireUser(req.id)) };
    },

    async createOrganization(req) {
      const name = req.name.trim();
      const slug = req.slug.trim() === "" ? deriveSlug(name) : req.slug.trim();
      const problems = [];
      if (name === "") problems.push({ field: "name", code: "can't be blank" });
      const slugIssue = name === "" && req.slug.trim() === "" ? undefined : slugProblem(slug);
      if (slugIssue) problems.push({ field: "slug", code: slugIssue });
      if (problems.length > 0) throw invalidFields(problems);
      const org: OrganizationDoc = { _id: newId(), slug, name, teamsEnabled: req.teamsEnabled, createdAt: now() };
      try {
        await repo.insertOrganization(org);
      } catch (err) {
        if (err instanceof DuplicateError) throw alreadyExists("slug", "has already been taken", err);
        throw err;
      }
      await events.publish(SUBJECTS.identity.organizationCreated, OrganizationCreatedSchema, {
        organization: orgMessage(org),
      });
      return { organization: orgMessage(org) };
    },

    async getOrganization(req) {
      const key = req.id !== "" ? req.id : req.slug;
      if (key === "") throw invalidFields([{ field: "id", code: "or slug is required" }]);
      return { organization: orgMessage(await requireOrganization(key)) };
    },

    async listOrganizations(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await repo.listOrganizations(req.ids, skip, perPage);
      return { organizations: page.items.map(orgMessage), totalCount: page.total };
    },

    async addMember(req) {
      const org = await requireOrganization(req.organization);
      const user = await requireUser(req.userId);
      const role: RoleName = effectiveRole(req.role) === Role.ADMIN ? "admin" : "member";
      const membership = await repo.upsertMembership({
        _id: `${org._id}:${user._id}`,
        organizationId: org._id,
        userId: user._id,
        role,
        userName: user.name,
        createdAt: now(),
      });
      await events.publish(SUBJECTS.identity.membershipChanged, MembershipChangedSchema, {
        membership: membershipMessage(membership),
      });
      return { membership: membershipMessage(membership) };
    },

    async listMembers(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await repo.listMemberships(req.organizationId, skip, perPage);
      const users = new Map((await repo.findUsers(page.items.map((m) => m.userId))).map((u) => [u._id, u]));
      const members = page.items.flatMap((m) => {
        const user = users.get(m.userId);
        return user ? [{ user: userMessage(user), role: roleOf(m.role), joinedAt: toTimestamp(m.createdAt) }] : [];
      });
      return { members, totalCount: page.total };
    },

    async getMember(req) {
      const membership = isUuid(req.userId) ? await repo.findMembership(req.organizationId, req.userId) : null;
      const user = membership ? await repo.findUser(membership.userId) : null;
      if (!membership || !user) throw notFound("user");
      return {
        member: { user: userMessage(user), role: roleOf(membership.role), joinedAt: toTimestamp(membership.createdAt) },
      };
    },

    async createAccessToken(req) {
      const user = await requireUser(req.userId);
      const { scopes, unknown } = parseScopes(req.scopes);
      const problems = [];
      if (unknown.length > 0) problems.push({ field: "scopes", code: `has unknown scopes: ${unknown.join(", ")}` });
      else if (scopes.length === 0) problems.push({ field: "scopes", code: "can't be blank" });
      const organizationIds: string[] = [];
      for (const ref of req.organizations.map((o) => o.trim()).filter((o) => o !== "")) {
        const org = isUuid(ref) ? await repo.findOrganization({ id: ref }) : await repo.findOrganization({ slug: ref });
        if (org) organizationIds.push(org._id);
        else problems.push({ field: "organizations", code: `has an unknown organization: ${ref}` });
      }
      if (problems.length > 0) throw invalidFields(problems);
      const secret = newSecret(ACCESS_TOKEN_PREFIX);
      const token: TokenDoc = {
        _id: newId(),
        hash: hashSecret(secret),
        userId: user._id,
        scopes,
        organizationIds: [...new Set(organizationIds)],
        description: req.description.trim(),
        createdAt: now(),
        revokedAt: null,
      };
      await repo.insertToken(token);
      return { token: tokenMessage(token), secret };
    },

    async revokeAccessToken(req) {
      const found =
        req.secret !== ""
          ? await repo.findTokenByHash(hashSecret(req.secret))
          : isUuid(req.id)
            ? await repo.findToken(req.id)
            : null;
      if (!found) throw notFound("access token");
      const revoked = (await repo.revokeToken(found._id, now())) ?? found;
      await events.publish(SUBJECTS.identity.tokenRevoked, TokenRevokedSchema, {
        tokenId: revoked._id,
        userId: revoked.userId,
      });
      return { token: tokenMessage(revoked) };
    },

    async authenticateAccessToken(req) {
      if (req.secret === "") throw unauthenticated();
      const token = await repo.findTokenByHash(hashSecret(req.secret));
      if (!token || token.revokedAt) throw unauthenticated();
      const user = await repo.findUser(token.userId);
      if (!user) throw unauthenticated();
      const memberships = await repo.membershipsOfUser(user._id);
      const reachable = reachableOrganizations(
        memberships.map((m) => ({ organizationId: m.organizationId, role: roleOf(m.role) })),
        token.organizationIds,
      );
      const orgs = new Map(
        (await repo.findOrganizations(reachable.map((r) => r.organizationId))).map((o) => [o._id, o]),
      );
      const organizations = reachable.flatMap((r) => {
        const org = orgs.get(r.organizationId);
        if (!org) return [];
        const level = organizationPipelineAccess(r.role, org.teamsEnabled);
        return [
          {
            organization: orgMessage(org),
            role: r.role,
            ...(level === undefined ? {} : { allPipelines: accessOfLevel(level) }),
          },
        ];
      });
      return { principal: { token: tokenMessage(token), user: userMessage(user), organizations } };
    },
  };
}
