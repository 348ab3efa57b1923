import { MembershipChangedSchema, TokenRevokedSchema } from "@conveyor/proto/identity";
import { type Logger, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { PrincipalCache } from "./principal-cache.js";

/**
 * Drops cached principals as soon as identity announces a revocation or a membership change. Every gateway
 * instance needs every such event, so these are plain (non-durable) subscriptions, each a supervised loop
 * (subscribeEvents): an undecodable event is logged and counted, and a subscription that breaks is made again after
 * the cache is cleared, since it may have missed a revocation. The cache's TTL bounds staleness otherwise. Returns a
 * function that stops both.
 */
export function subscribeIdentityEvents(nc: NatsConnection, cache: PrincipalCache, logger: Logger) {
  const dropAll = () => cache.clear();
  const stops = [
    subscribeEvents(
      { nc },
      SUBJECTS.identity.tokenRevoked,
      TokenRevokedSchema,
      logger,
      (e) => cache.evictToken(e.tokenId),
      dropAll,
    ),
    subscribeEvents(
      { nc },
      SUBJECTS.identity.membershipChanged,
      MembershipChangedSchema,
      logger,
      (e) => {
        const userId = e.membership?.userId;
        if (userId) cache.evictUser(userId);
      },
      dropAll,
    ),
  ];
  return async (): Promise<void> => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
