import type { SessionDoc, SessionRepository, SignInLinkDoc } from "./session-repository.js";

/** An in-memory SessionRepository with the MongoDB one's rules (a link is used once), for unit tests. */
export function createMemorySessionRepository(): SessionRepository {
  const sessions = new Map<string, SessionDoc>();
  const links = new Map<string, SignInLinkDoc>();
  const copy = <T>(v: T): T => structuredClone(v);
  const byHash = <T extends { hash: string }>(docs: Map<string, T>, hash: string) =>
    [...docs.values()].find((d) => d.hash === hash);
  return {
    async insertSession(session) {
      sessions.set(session._id, copy(session));
    },
    findSessionByHash: async (hash) => copy(byHash(sessions, hash) ?? null),
    async touchSession(id, lastSeenAt, idleExpiresAt) {
      const session = sessions.get(id);
      if (session) Object.assign(session, { lastSeenAt, idleExpiresAt });
    },
    async deleteSessionByHash(hash) {
      const session = byHash(sessions, hash);
      if (!session) return null;
      sessions.delete(session._id);
      return copy(session);
    },
    async deleteUserSessions(userId) {
      const mine = [...sessions.values()].filter((s) => s.userId === userId);
      for (const s of mine) sessions.delete(s._id);
      return mine.length;
    },
    async insertLink(link) {
      links.set(link._id, copy(link));
    },
    async useLink(hash, at) {
      const link = byHash(links, hash);
      if (!link || link.usedAt !== null || link.expiresAt <= at) return null;
      link.usedAt = at;
      return copy(link);
    },
    async deleteExpired(now) {
      for (const s of [...sessions.values()]) if (s.idleExpiresAt <= now) sessions.delete(s._id);
      for (const l of [...links.values()]) if (l.expiresAt <= now) links.delete(l._id);
    },
  };
}
