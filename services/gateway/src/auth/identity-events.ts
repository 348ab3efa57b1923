import { MembershipChangedSchema, SessionEndedSchema, TokenRevokedSchema } from "@conveyor/proto/identity";
import { type Logger, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { PrincipalCache } from "./principal-cache.js";
import { sessionTokenId } from "./session-cache.js";

/** The gateway's caches of principals: the REST API's access tokens and the pages' sessions. */
export interface PrincipalCaches {
  tokens: PrincipalCache;
  sessions: PrincipalCache;
}

/**
 * Drops cached principals as soon as identity announces a revocation, an ended session or a membership change.
 * Every gateway instance needs every such event, so these are plain (non-durable) subscriptions, each a supervised
 * loop (subscribeEvents): an undecodable event is logged and counted, and a subscription that breaks is made again
 * after both caches are cleared, since it may have missed an event. The caches' TTL bounds staleness otherwise.
 * Returns a function that stops them all.
 */
export function subscribeIdentityEvents(nc: NatsConnection, caches: PrincipalCaches, logger: Logger) {
  const { tokens, sessions } = caches;
  const dropAll = () => {
    tokens.clear();
    sessions.clear();
  };
  const stops = [
    subscribeEvents(
      { nc },
      SUBJECTS.identity.tokenRevoked,
      TokenRevokedSchema,
      logger,
      (e) => tokens.evictToken(e.tokenId),
      dropAll,
    ),
    subscribeEvents(
      { nc },
      SUBJECTS.identity.sessionEnded,
      SessionEndedSchema,
      logger,
      // One session, or every session of the user when none is named.
      (e) => (e.sessionId ? sessions.evictToken(sessionTokenId(e.sessionId)) : sessions.evictUser(e.userId)),
      dropAll,
    ),
    subscribeEvents(
      { nc },
      SUBJECTS.identity.membershipChanged,
      MembershipChangedSchema,
      logger,
      (e) => {
        const userId = e.membership?.userId;
        if (!userId) return;
        tokens.evictUser(userId);
        sessions.evictUser(userId);
      },
      dropAll,
    ),
  ];
  return async (): Promise<void> => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
