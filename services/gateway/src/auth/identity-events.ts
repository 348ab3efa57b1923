import { MembershipChangedSchema, TokenRevokedSchema } from "@conveyor/proto/identity";
import { decodeEvent, type Logger, SUBJECTS } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { PrincipalCache } from "./principal-cache.js";

/**
 * Drops cached principals as soon as identity announces a revocation or a membership change. Every gateway
 * instance needs every such event, so this is a plain (non-durable) subscription; the cache TTL bounds staleness
 * if one is missed.
 */
export function subscribeIdentityEvents(nc: NatsConnection, cache: PrincipalCache, logger: Logger): void {
  const handle = (subject: string, onData: (data: Uint8Array) => void) => {
    const sub = nc.subscribe(subject);
    void (async () => {
      for await (const msg of sub) {
        try {
          onData(msg.data);
        } catch (err) {
          logger.warn({ err, subject }, "undecodable identity event");
        }
      }
    })();
  };
  handle(SUBJECTS.identity.tokenRevoked, (data) => cache.evictToken(decodeEvent(TokenRevokedSchema, data).tokenId));
  handle(SUBJECTS.identity.membershipChanged, (data) => {
    const userId = decodeEvent(MembershipChangedSchema, data).membership?.userId;
    if (userId) cache.evictUser(userId);
  });
}
