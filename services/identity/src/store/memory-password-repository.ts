import type { PasswordDoc, PasswordRepository } from "./password-repository.js";

/** An in-memory PasswordRepository, for unit tests. */
export function createMemoryPasswordRepository(): PasswordRepository {
  const passwords = new Map<string, PasswordDoc>();
  return {
    async set(userId, hash, at) {
      passwords.set(userId, { _id: userId, hash, updatedAt: at });
    },
    find: async (userId) => structuredClone(passwords.get(userId) ?? null),
  };
}
