import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { createMongoPasswordRepository, type PasswordRepository } from "./password-repository.js";
import { createMongoSessionRepository, type SessionDoc, type SessionRepository } from "./session-repository.js";

// Runs against the stack's real MongoDB-wire server (FerretDB or mongod), in a throwaway database.
const url = process.env.MONGODB_URL ?? "";
const dbName = `it_sessions_${Date.now()}`;
let client: MongoClient;
let repo: SessionRepository;
let passwords: PasswordRepository;

beforeAll(async () => {
  // Enough connections for the racing uses below to reach the server at once.
  client = await new MongoClient(url, { maxPoolSize: 25 }).connect();
  repo = await createMongoSessionRepository(client.db(dbName));
  passwords = createMongoPasswordRepository(client.db(dbName));
});

afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

const t0 = new Date("2026-03-01T10:00:00Z");
const at = (ms: number) => new Date(t0.getTime() + ms);

function session(userId: string, idleMs = 60_000): SessionDoc {
  return {
    _id: randomUUID(),
    hash: randomUUID(),
    userId,
    createdAt: t0,
    lastSeenAt: t0,
    idleExpiresAt: at(idleMs),
    expiresAt: at(2 * idleMs),
  };
}

describe("MongoDB session repository", () => {
  it("finds a session by its hash, moves its last use, and deletes it once", async () => {
    const s = session(randomUUID());
    await repo.insertSession(s);
    expect(await repo.findSessionByHash(s.hash)).toEqual(s);
    await repo.touchSession(s._id, at(1000), at(61_000));
    expect(await repo.findSessionByHash(s.hash)).toMatchObject({ lastSeenAt: at(1000), idleExpiresAt: at(61_000) });
    expect(await repo.deleteSessionByHash(s.hash)).toMatchObject({ _id: s._id });
    expect(await repo.deleteSessionByHash(s.hash)).toBeNull();
    expect(await repo.findSessionByHash(s.hash)).toBeNull();
  });

  it("refuses a second session with the same hash", async () => {
    const s = session(randomUUID());
    await repo.insertSession(s);
    await expect(repo.insertSession({ ...s, _id: randomUUID() })).rejects.toThrow();
  });

  it("deletes every session of one user, and only theirs", async () => {
    const [ann, bob] = [randomUUID(), randomUUID()];
    const mine = [session(ann), session(ann)];
    const theirs = session(bob);
    for (const s of [...mine, theirs]) await repo.insertSession(s);
    expect(await repo.deleteUserSessions(ann)).toBe(2);
    expect(await repo.findSessionByHash(mine[0]?.hash ?? "")).toBeNull();
    expect(await repo.findSessionByHash(theirs.hash)).not.toBeNull();
  });

  it("lets exactly one of many concurrent uses of a link win, and none after it expired", async () => {
    const link = { _id: randomUUID(), hash: randomUUID(), userId: randomUUID(), createdAt: t0, usedAt: null };
    await repo.insertLink({ ...link, expiresAt: at(60_000) });
    const uses = await Promise.all(Array.from({ length: 20 }, () => repo.useLink(link.hash, at(1000))));
    const winners = uses.filter((u) => u !== null);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ _id: link._id, usedAt: at(1000) });

    const late = { ...link, _id: randomUUID(), hash: randomUUID(), expiresAt: at(60_000) };
    await repo.insertLink(late);
    expect(await repo.useLink(late.hash, at(60_000))).toBeNull();
    expect(await repo.useLink(late.hash, at(59_999))).not.toBeNull();
  });

  it("deletes what has expired and keeps the rest", async () => {
    const user = randomUUID();
    const [old, live] = [session(user, 1000), session(user, 10 * 60_000)];
    await repo.insertSession(old);
    await repo.insertSession(live);
    const link = {
      _id: randomUUID(),
      hash: randomUUID(),
      userId: user,
      createdAt: t0,
      expiresAt: at(1000),
      usedAt: null,
    };
    await repo.insertLink(link);
    await repo.deleteExpired(at(1000));
    expect(await repo.findSessionByHash(old.hash)).toBeNull();
    expect(await repo.findSessionByHash(live.hash)).not.toBeNull();
    expect(await repo.useLink(link.hash, t0)).toBeNull();
  });
});

describe("MongoDB password repository", () => {
  it("keeps one hash per user, replaced by the next", async () => {
    const user = randomUUID();
    expect(await passwords.find(user)).toBeNull();
    await passwords.set(user, "scrypt$first", t0);
    await passwords.set(user, "scrypt$second", at(1000));
    expect(await passwords.find(user)).toEqual({ _id: user, hash: "scrypt$second", updatedAt: at(1000) });
  });
});
