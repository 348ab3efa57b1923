import type { Collection, Db } from "mongodb";

/** A session of the pages as stored: the SHA-256 of its secret, never the secret (domain/session-lifetime.ts). */
export interface SessionDoc {
  _id: string;
  hash: string;
  userId: string;
  createdAt: Date;
  lastSeenAt: Date;
  idleExpiresAt: Date;
  expiresAt: Date;
}

/** A one-time sign-in link as stored: the SHA-256 of its secret; usedAt is set by the one sign-in it allows. */
export interface SignInLinkDoc {
  _id: string;
  hash: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** Persistence of sessions and sign-in links. An ended session is deleted: a deleted session cannot come back. */
export interface SessionRepository {
  insertSession(session: SessionDoc): Promise<void>;
  findSessionByHash(hash: string): Promise<SessionDoc | null>;
  /** Writes a session's last use and its moved idle end. */
  touchSession(id: string, lastSeenAt: Date, idleExpiresAt: Date): Promise<void>;
  /** Deletes the session of a secret's hash; returns it, or null when there was none. */
  deleteSessionByHash(hash: string): Promise<SessionDoc | null>;
  /** Deletes every session of a user; returns how many there were. */
  deleteUserSessions(userId: string): Promise<number>;
  insertLink(link: SignInLinkDoc): Promise<void>;
  /**
   * Marks the link of a secret's hash used, if it is unused and not expired at `at`, and returns it; null otherwise.
   * Of any number of concurrent uses, exactly one gets the link.
   */
  useLink(hash: string, at: Date): Promise<SignInLinkDoc | null>;
  /** Deletes the sessions and links that can no longer be used at `now`. */
  deleteExpired(now: Date): Promise<void>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoSessionRepository(db: Db): Promise<SessionRepository> {
  const sessions: Collection<SessionDoc> = db.collection("sessions");
  const links: Collection<SignInLinkDoc> = db.collection("sign_in_links");
  await Promise.all([
    sessions.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
    sessions.createIndex({ userId: 1 }, { name: "user_sessions" }),
    sessions.createIndex({ idleExpiresAt: 1 }, { name: "idle_expiry" }),
    links.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
    links.createIndex({ expiresAt: 1 }, { name: "expiry" }),
  ]);
  return {
    async insertSession(session) {
      await sessions.insertOne(session);
    },
    findSessionByHash: (hash) => sessions.findOne({ hash }),
    async touchSession(id, lastSeenAt, idleExpiresAt) {
      await sessions.updateOne({ _id: id }, { $set: { lastSeenAt, idleExpiresAt } });
    },
    deleteSessionByHash: (hash) => sessions.findOneAndDelete({ hash }),
    async deleteUserSessions(userId) {
      return (await sessions.deleteMany({ userId })).deletedCount;
    },
    async insertLink(link) {
      await links.insertOne(link);
    },
    useLink: (hash, at) =>
      links.findOneAndUpdate(
        { hash, usedAt: null, expiresAt: { $gt: at } },
        { $set: { usedAt: at } },
        { returnDocument: "after" },
      ),
    async deleteExpired(now) {
      // The idle end is never past the maximum end (domain/session-lifetime.ts), so it alone says a session is over.
      await Promise.all([
        sessions.deleteMany({ idleExpiresAt: { $lte: now } }),
        links.deleteMany({ expiresAt: { $lte: now } }),
      ]);
    },
  };
}
