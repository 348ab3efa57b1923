import type { Collection, Db } from "mongodb";

/**
 * A user's password as stored: the scrypt hash (domain/password.ts), never the password. Kept apart from the user
 * document so that no read of users can carry it out.
 */
export interface PasswordDoc {
  /** The user's id. */
  _id: string;
  hash: string;
  updatedAt: Date;
}

/** Persistence of password hashes, one per user. */
export interface PasswordRepository {
  /** Sets or replaces the user's hash. */
  set(userId: string, hash: string, at: Date): Promise<void>;
  find(userId: string): Promise<PasswordDoc | null>;
}

/** The MongoDB implementation (the user id is the document's _id: no other index is needed). */
export function createMongoPasswordRepository(db: Db): PasswordRepository {
  const passwords: Collection<PasswordDoc> = db.collection("passwords");
  return {
    async set(userId, hash, at) {
      await passwords.updateOne({ _id: userId }, { $set: { hash, updatedAt: at } }, { upsert: true });
    },
    find: (userId) => passwords.findOne({ _id: userId }),
  };
}
