/**
 * The record lookups and inserts the RPC groups share: a user or an organization or NotFound, and the name, slug
 * and insert of a new team, suite or registry.
 */

import { alreadyExists, invalidFields, isUuid, notFound } from "@conveyor/runtime";
import { deriveSlug, slugProblem } from "../domain/slug.js";
import {
  DuplicateError,
  type IdentityRepository,
  type OrganizationDoc,
  type UserDoc,
} from "../store/identity-repository.js";

/** A user by UUID, or NotFound. */
export async function requireUser(identity: IdentityRepository, id: string): Promise<UserDoc> {
  const user = isUuid(id) ? await identity.findUser(id) : null;
  if (!user) throw notFound("user");
  return user;
}

/** An organization by UUID or slug, or NotFound. */
export async function requireOrganization(identity: IdentityRepository, ref: string): Promise<OrganizationDoc> {
  const org = isUuid(ref)
    ? await identity.findOrganization({ id: ref })
    : await identity.findOrganization({ slug: ref });
  if (!org) throw notFound("organization");
  return org;
}

/**
 * The name of a new team, suite or registry and the slug derived from it; a blank name, or one that gives no usable
 * slug, is InvalidArgument on "name".
 */
export function nameAndSlug(raw: string): { name: string; slug: string } {
  const name = raw.trim();
  if (name === "") throw invalidFields([{ field: "name", code: "can't be blank" }]);
  const slug = deriveSlug(name);
  const problem = slugProblem(slug);
  if (problem) throw invalidFields([{ field: "name", code: `gives an unusable slug: ${problem}` }]);
  return { name, slug };
}

/** Runs an insert of a record whose slug is unique in its organization; a clash is AlreadyExists on "name". */
export async function insertNamed(insert: () => Promise<void>): Promise<void> {
  try {
    await insert();
  } catch (err) {
    if (err instanceof DuplicateError) throw alreadyExists("name", "has already been taken", err);
    throw err;
  }
}
