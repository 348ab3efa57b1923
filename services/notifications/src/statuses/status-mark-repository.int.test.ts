import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";
import { keyRingFrom, sealCredential } from "../providers/credential-envelope.js";
import {
  createMongoSourceProviderRepository,
  type SourceProviderDoc,
  type SourceProviderRepository,
} from "../providers/source-provider-repository.js";
import { createMemoryStatusMarkRepository } from "./memory-status-mark-repository.js";
import {
  createMongoStatusMarkRepository,
  orderText,
  type StatusMarkRepository,
  statusMarkId,
} from "./status-mark-repository.js";

// The commit-status marks and the source-provider connections over the real MongoDB-wire server (the bundled
// FerretDB in the test stack): a mark only ever rises (the conditional upsert whose insert collides when the mark is
// at or above), the in-memory fake agrees, and connections are stored, listed, removed and rewrapped by
// compare-and-set on their key id.
const dbName = `it_notifications_${Date.now()}`;
let mongo: MongoClient;
let marks: StatusMarkRepository;
let connections: SourceProviderRepository;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  marks = await createMongoStatusMarkRepository(mongo.db(dbName));
  connections = await createMongoSourceProviderRepository(mongo.db(dbName));
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

describe("commit-status marks", () => {
  it("rise and never fall, like the in-memory fake", async () => {
    const memory = createMemoryStatusMarkRepository();
    const id = statusMarkId("127.0.0.1", "Alice/Widgets", "A".repeat(40), "buildkite/widgets");
    const at = new Date();
    const steps: Array<[number[], boolean]> = [
      [[7, 2], true],
      [[7, 5], true],
      [[7, 3], false],
      [[7, 5], false],
      [[8, 1], true],
      [[7, 9], false],
      [[10, 0], true],
    ];
    for (const [order, raised] of steps) {
      expect(await marks.raise(id, orderText(order), "pending", at)).toBe(raised);
      expect(await memory.raise(id, orderText(order), "pending", at)).toBe(raised);
    }
    expect(await marks.orderOf(id)).toBe(orderText([10, 0]));
    expect(await memory.orderOf(id)).toBe(orderText([10, 0]));
    expect(await marks.orderOf("none")).toBeNull();
  });

  it("keep one mark per host, repository, commit and context (case of host, path and SHA aside)", () => {
    const a = statusMarkId("Gitea.local", "Alice/W", "ABC", "ctx");
    expect(statusMarkId("gitea.local", "alice/w", "abc", "ctx")).toBe(a);
    expect(statusMarkId("gitea.local", "alice/w", "abc", "ctx/x")).not.toBe(a);
  });

  it("order text sorts as the orders do", () => {
    expect(orderText([7, 10]) > orderText([7, 9])).toBe(true);
    expect(orderText([10, 0]) > orderText([9, 999])).toBe(true);
  });

  it("are removed once older than the bound", async () => {
    const old = new Date(Date.now() - 40 * 86_400_000);
    await marks.raise("old-mark", orderText([1, 1]), "success", old);
    expect(await marks.removeOlderThan(new Date(Date.now() - 30 * 86_400_000), 1000)).toBeGreaterThanOrEqual(1);
    expect(await marks.orderOf("old-mark")).toBeNull();
  });
});

describe("source-provider connections", () => {
  const ring = keyRingFrom(randomBytes(32).toString("base64"), "");
  const doc = (id: string, organizationId: string, at: number): SourceProviderDoc => ({
    _id: id,
    organizationId,
    kind: "gitea",
    apiUrl: "http://127.0.0.1:3000/api/v1",
    repositoryHost: "127.0.0.1",
    credentialType: "token",
    credential: sealCredential(ring, `${organizationId}/${id}`, "token"),
    description: "",
    createdAt: new Date(at),
    createdBy: "u",
  });

  it("are listed oldest first per organization, read and removed within it", async () => {
    await connections.insert(doc("c2", "org-a", 2000));
    await connections.insert(doc("c1", "org-a", 1000));
    await connections.insert(doc("c3", "org-b", 500));
    expect((await connections.list("org-a")).map((d) => d._id)).toEqual(["c1", "c2"]);
    expect(await connections.count("org-a")).toBe(2);
    expect(await connections.get("org-b", "c1")).toBeNull();
    expect(await connections.remove("org-b", "c1")).toBe(false);
    expect(await connections.remove("org-a", "c1")).toBe(true);
    expect((await connections.list("org-a")).map((d) => d._id)).toEqual(["c2"]);
  });

  it("replace a credential only while it is still under the key it was read with", async () => {
    const stored = await connections.get("org-a", "c2");
    const other = keyRingFrom(randomBytes(32).toString("base64"), "");
    expect((await connections.sealedWithOtherKey(other.current.id, 10)).map((d) => d._id).sort()).toEqual(["c2", "c3"]);
    const next = sealCredential(other, "org-a/c2", "token");
    expect(await connections.replaceCredential("c2", "wrong-key-id", next)).toBe(false);
    expect(await connections.replaceCredential("c2", stored?.credential.keyId ?? "", next)).toBe(true);
    expect((await connections.get("org-a", "c2"))?.credential.keyId).toBe(other.current.id);
  });
});
