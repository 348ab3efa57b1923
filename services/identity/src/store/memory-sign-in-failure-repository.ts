import { failureCountId, type SignInFailureDoc, type SignInFailureRepository } from "./sign-in-failure-repository.js";

/** An in-memory SignInFailureRepository, for unit tests. */
export function createMemorySignInFailureRepository(): SignInFailureRepository {
  const failures = new Map<string, SignInFailureDoc>();
  return {
    async add(key, window, delta) {
      const id = failureCountId(key, window.start);
      const doc = failures.get(id) ?? { _id: id, count: 0, until: window.end };
      doc.count += delta;
      failures.set(id, doc);
      return doc.count;
    },
    async deleteEnded(now) {
      for (const [id, doc] of [...failures]) if (doc.until <= now) failures.delete(id);
    },
  };
}
