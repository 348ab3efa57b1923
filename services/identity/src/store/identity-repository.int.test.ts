import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { createMongoIdentityRepository, DuplicateError, type IdentityRepository } from "./identity-repository.js";

// Runs against the stack's real MongoDB-wire server (FerretDB or mongod), in a throwaway database.
const url = process.env.MONGODB_URL ?? "";
const dbName = `it_identity_${Date.now()}`;
let client: MongoClient;
let repo: IdentityRepository;

beforeAll(async () => {
  client = await new MongoClient(url).connect();
  repo = await createMongoIdentityRepository(client.db(dbName));
});

afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

const user = (email: string, name = email) => ({
  _id: randomUUID(),
  name,
  email,
  avatarUrl: null,
  createdAt: new Date(),
});

describe("MongoDB identity repository", () => {
  it("enforces unique emails and slugs with its indexes", async () => {
    await repo.insertUser(user("dup@example.com"));
    await expect(repo.insertUser(user("dup@example.com"))).rejects.toBeInstanceOf(DuplicateError);
    const org = { _id: randomUUID(), slug: "dup-org", name: "Dup", teamsEnabled: false, createdAt: new Date() };
    await repo.insertOrganization(org);
    await expect(repo.insertOrganization({ ...org, _id: randomUUID() })).rejects.toMatchObject({ field: "slug" });
  });

  it("upserts a membership once and pages members by name", async () => {
    const orgId = randomUUID();
    const users = ["Zed", "Amy", "Max"].map((n) => user(`${n}-${orgId}@example.com`, n));
    for (const u of users) {
      await repo.insertUser(u);
      const m = {
        _id: `${orgId}:${u._id}`,
        organizationId: orgId,
        userId: u._id,
        role: "member" as const,
        userName: u.name,
        createdAt: new Date(),
      };
      await repo.upsertMembership(m);
      await repo.upsertMembership({ ...m, role: "admin" });
    }
    const first = await repo.listMemberships(orgId, 0, 2);
    expect(first.total).toBe(3);
    expect(first.items.map((m) => [m.userName, m.role])).toEqual([
      ["Amy", "admin"],
      ["Max", "admin"],
    ]);
    expect((await repo.listMemberships(orgId, 2, 2)).items.map((m) => m.userName)).toEqual(["Zed"]);
  });

  it("finds tokens by hash and revokes them once", async () => {
    const token = {
      _id: randomUUID(),
      hash: `h-${randomUUID()}`,
      userId: randomUUID(),
      scopes: ["read_builds"],
      organizationIds: [],
      description: "",
      createdAt: new Date(),
      revokedAt: null,
    };
    await repo.insertToken(token);
    expect((await repo.findTokenByHash(token.hash))?._id).toBe(token._id);
    const first = await repo.revokeToken(token._id, new Date("2026-01-01T00:00:00Z"));
    const second = await repo.revokeToken(token._id, new Date("2027-01-01T00:00:00Z"));
    expect(first?.revokedAt?.toISOString()).toBe("2026-01-01T00:00:00.000Z");
    expect(second?.revokedAt?.toISOString()).toBe("2026-01-01T00:00:00.000Z");
  });
});
