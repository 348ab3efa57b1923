/**
 * The session RPCs (docs/pages.md#signing-in): resolving a session's secret to the principal the gateway's pages act
 * as, and ending one session or all of a user's.
 */

import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { IdentityService } from "@conveyor/proto/identity";
import { ALL_SCOPES, hashSecret, toTimestamp } from "@conveyor/runtime";
import { sessionExpired, sessionRefresh } from "../domain/session-lifetime.js";
import type { SessionDoc } from "../store/session-repository.js";
import { sessionMessage } from "./identity-message.js";
import { principalOf } from "./principal.js";
import { requireUser } from "./records.js";
import type { SignInContext } from "./sign-in-context.js";

type SessionRpcs = Pick<ServiceImpl<typeof IdentityService>, "authenticateSession" | "endSession" | "endUserSessions">;

/**
 * The token a session acts with: id "session:<session id>" (what the gateway's cache drops on the session's end),
 * every REST scope, and no organization allow-list (the user's memberships, as they are now).
 */
export const sessionToken = (s: SessionDoc) => ({
  id: `session:${s._id}`,
  userId: s.userId,
  scopes: [...ALL_SCOPES],
  organizationIds: [],
  description: "session",
  createdAt: toTimestamp(s.createdAt),
});

/** Sessions: authenticated on every page request (through the gateway's cache), ended by signing out or for a user. */
export function createSessionRpcs(ctx: SignInContext): SessionRpcs {
  const { repo, sessions, now, settings } = ctx;
  const unauthenticated = () => new ConnectError("the session has ended or expired", Code.Unauthenticated);

  return {
    async authenticateSession(req) {
      const session = req.secret === "" ? null : await sessions.findSessionByHash(hashSecret(req.secret));
      const at = now();
      if (!session || sessionExpired(session, at)) throw unauthenticated();
      const user = await repo.findUser(session.userId);
      if (!user) throw unauthenticated();
      const refresh = sessionRefresh(session, at, settings.lifetime);
      if (refresh) {
        await sessions.touchSession(session._id, refresh.lastSeenAt, refresh.idleExpiresAt);
        Object.assign(session, refresh);
      }
      const principal = await principalOf(repo, user, sessionToken(session), []);
      return { principal, session: sessionMessage(session) };
    },

    async endSession(req) {
      const ended = req.secret === "" ? null : await sessions.deleteSessionByHash(hashSecret(req.secret));
      if (ended) await ctx.announceEnded(ended);
      return {};
    },

    async endUserSessions(req) {
      const user = await requireUser(repo, req.userId);
      return { ended: await ctx.endUserSessions(user._id) };
    },
  };
}
