/**
 * The organization RPCs: creating and reading organizations, and their members.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import {
  type IdentityService,
  MembershipChangedSchema,
  OrganizationCreatedSchema,
  Role,
} from "@conveyor/proto/identity";
import {
  alreadyExists,
  invalidFields,
  isUuid,
  newId,
  notFound,
  pageWindow,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { effectiveRole } from "../domain/access-policy.js";
import { deriveSlug, organizationSlugProblem } from "../domain/slug.js";
import { DuplicateError, type OrganizationDoc, type RoleName } from "../store/identity-repository.js";
import type { IdentityContext } from "./identity-context.js";
import { membershipMessage, organizationMessage, roleOf, userMessage } from "./identity-message.js";
import { requireOrganization, requireUser } from "./records.js";

type OrganizationRpcs = Pick<
  ServiceImpl<typeof IdentityService>,
  "createOrganization" | "getOrganization" | "listOrganizations" | "addMember" | "listMembers" | "getMember"
>;

/** Organizations, named by a slug unique across the installation, and their members with a role each. */
export function createOrganizationRpcs(ctx: IdentityContext): OrganizationRpcs {
  const { repo, events, now } = ctx;

  return {
    async createOrganization(req) {
      const name = req.name.trim();
      const slug = req.slug.trim() === "" ? deriveSlug(name) : req.slug.trim();
      const problems = [];
      if (name === "") problems.push({ field: "name", code: "can't be blank" });
      const slugIssue = name === "" && req.slug.trim() === "" ? undefined : organizationSlugProblem(slug);
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
        organization: organizationMessage(org),
      });
      return { organization: organizationMessage(org) };
    },

    async getOrganization(req) {
      const key = req.id !== "" ? req.id : req.slug;
      if (key === "") throw invalidFields([{ field: "id", code: "or slug is required" }]);
      return { organization: organizationMessage(await requireOrganization(repo, key)) };
    },

    async listOrganizations(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await repo.listOrganizations(req.ids, skip, perPage);
      return { organizations: page.items.map(organizationMessage), totalCount: page.total };
    },

    async addMember(req) {
      const org = await requireOrganization(repo, req.organization);
      const user = await requireUser(repo, req.userId);
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
  };
}
