import { isDuplicateKeyError } from "@conveyor/runtime";
import { type Collection, type Db, MongoServerError } from "mongodb";

export interface UserDoc {
  _id: string;
  name: string;
  email: string;
  avatarUrl: string | null;
  createdAt: Date;
}

export interface OrganizationDoc {
  _id: string;
  slug: string;
  name: string;
  teamsEnabled: boolean;
  createdAt: Date;
}

export type RoleName = "admin" | "member";

export interface MembershipDoc {
  /** `${organizationId}:${userId}`, so a user is a member at most once. */
  _id: string;
  organizationId: string;
  userId: string;
  role: RoleName;
  /** Denormalized from the user so member lists sort by name without a join. */
  userName: string;
  createdAt: Date;
}

export interface TokenDoc {
  _id: string;
  /** SHA-256 of the secret. */
  hash: string;
  userId: string;
  scopes: string[];
  organizationIds: string[];
  description: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface Page<T> {
  items: T[];
  total: number;
}

/** Raised when an insert clashes with a unique index; `field` names the clashing attribute. */
export class DuplicateError extends Error {
  override name = "DuplicateError";
  constructor(
    readonly field: string,
    options?: ErrorOptions,
  ) {
    super(`duplicate ${field}`, options);
  }
}

/** Persistence of users, organizations, memberships and tokens. */
export interface IdentityRepository {
  insertUser(user: UserDoc): Promise<void>;
  findUser(id: string): Promise<UserDoc | null>;
  /** The user of a lower-cased email address. */
  findUserByEmail(email: string): Promise<UserDoc | null>;
  findUsers(ids: readonly string[]): Promise<UserDoc[]>;
  insertOrganization(org: OrganizationDoc): Promise<void>;
  findOrganization(by: { id?: string; slug?: string }): Promise<OrganizationDoc | null>;
  findOrganizations(ids: readonly string[]): Promise<OrganizationDoc[]>;
  listOrganizations(ids: readonly string[], skip: number, limit: number): Promise<Page<OrganizationDoc>>;
  /** Inserts the membership, or updates the role of an existing one; returns the stored document. */
  upsertMembership(m: MembershipDoc): Promise<MembershipDoc>;
  findMembership(organizationId: string, userId: string): Promise<MembershipDoc | null>;
  membershipsOfUser(userId: string): Promise<MembershipDoc[]>;
  listMemberships(organizationId: string, skip: number, limit: number): Promise<Page<MembershipDoc>>;
  insertToken(token: TokenDoc): Promise<void>;
  findTokenByHash(hash: string): Promise<TokenDoc | null>;
  findToken(id: string): Promise<TokenDoc | null>;
  /** Sets revokedAt if unset; returns the token as stored afterwards. */
  revokeToken(id: string, at: Date): Promise<TokenDoc | null>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoIdentityRepository(db: Db): Promise<IdentityRepository> {
  const users: Collection<UserDoc> = db.collection("users");
  const orgs: Collection<OrganizationDoc> = db.collection("organizations");
  const memberships: Collection<MembershipDoc> = db.collection("memberships");
  const tokens: Collection<TokenDoc> = db.collection("access_tokens");
  await Promise.all([
    users.createIndex({ email: 1 }, { unique: true, name: "email_unique" }),
    orgs.createIndex({ slug: 1 }, { unique: true, name: "slug_unique" }),
    orgs.createIndex({ name: 1, _id: 1 }, { name: "name_order" }),
    memberships.createIndex({ organizationId: 1, userName: 1, userId: 1 }, { name: "org_members_by_name" }),
    memberships.createIndex({ userId: 1 }, { name: "user_memberships" }),
    tokens.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
  ]);

  return {
    insertUser: (user) => insertUnique(users, user, "email"),
    findUser: (id) => users.findOne({ _id: id }),
    findUserByEmail: (email) => users.findOne({ email }),
    findUsers: (ids) => users.find({ _id: { $in: [...ids] } }).toArray(),
    insertOrganization: (org) => insertUnique(orgs, org, "slug"),
    findOrganization: (by) => (by.id ? orgs.findOne({ _id: by.id }) : orgs.findOne({ slug: by.slug ?? "" })),
    findOrganizations: (ids) => orgs.find({ _id: { $in: [...ids] } }).toArray(),
    async listOrganizations(ids, skip, limit) {
      const filter = { _id: { $in: [...ids] } };
      const [items, total] = await Promise.all([
        orgs.find(filter).sort({ name: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        orgs.countDocuments(filter),
      ]);
      return { items, total };
    },
    async upsertMembership(m) {
      const { role, userName, ...rest } = m;
      const stored = await memberships.findOneAndUpdate(
        { _id: m._id },
        {
          $set: { role, userName },
          $setOnInsert: { organizationId: rest.organizationId, userId: rest.userId, createdAt: rest.createdAt },
        },
        { upsert: true, returnDocument: "after" },
      );
      if (!stored) throw new Error("membership upsert returned nothing");
      return stored;
    },
    findMembership: (organizationId, userId) => memberships.findOne({ _id: `${organizationId}:${userId}` }),
    membershipsOfUser: (userId) => memberships.find({ userId }).toArray(),
    async listMemberships(organizationId, skip, limit) {
      const [items, total] = await Promise.all([
        memberships
          .find({ organizationId })
          .sort({ organizationId: 1, userName: 1, userId: 1 })
          .skip(skip)
          .limit(limit)
          .toArray(),
        memberships.countDocuments({ organizationId }),
      ]);
      return { items, total };
    },
    insertToken: (token) => insertUnique(tokens, token, "token"),
    findTokenByHash: (hash) => tokens.findOne({ hash }),
    findToken: (id) => tokens.findOne({ _id: id }),
    async revokeToken(id, at) {
      await tokens.updateOne({ _id: id, revokedAt: null }, { $set: { revokedAt: at } });
      return tokens.findOne({ _id: id });
    },
  };
}

/** Inserts a document; a clash with a unique index is a DuplicateError naming the clashing field (or `field`). */
export async function insertUnique<T extends { _id: string }>(c: Collection<T>, doc: T, field: string): Promise<void> {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: the driver's OptionalUnlessRequiredId type does not narrow here.
    await c.insertOne(doc as any);
  } catch (err) {
    if (isDuplicateKeyError(err)) throw new DuplicateError(duplicateField(err, field), { cause: err });
    throw err;
  }
}

/** Which unique index a duplicate key error came from: "_id" clashes are reported under the fallback field. */
function duplicateField(err: unknown, fallback: string): string {
  if (err instanceof MongoServerError && err.keyPattern) {
    const key = Object.keys(err.keyPattern)[0];
    if (key && key !== "_id") return key;
  }
  const message = err instanceof Error ? err.message : "";
  const match = /index: (\w+)_unique/.exec(message);
  return match?.[1] ?? fallback;
}
