import type { Client } from "@connectrpc/connect";
import type { IdentityService } from "@conveyor/proto/identity";
import { createPrincipalCache, identityLookup, type PrincipalCache } from "./principal-cache.js";

/**
 * A short-lived cache of the pages' session lookups, next to the access token one and of the same kind: a session's
 * principal is the user's, with token id "session:<session id>" (docs/pages.md#signing-in). Identity's session_ended
 * and membership_changed events drop entries at once (auth/identity-events.ts); the TTL bounds staleness otherwise.
 */
export function createSessionCache(
  identity: Pick<Client<typeof IdentityService>, "authenticateSession">,
  opts: { ttlMs: number; max?: number },
): PrincipalCache {
  return createPrincipalCache(
    identityLookup(async (secret) => (await identity.authenticateSession({ secret })).principal),
    opts,
  );
}

/** The token id a session's principal carries. */
export const sessionTokenId = (sessionId: string) => `session:${sessionId}`;
