import type { Principal } from "@conveyor/proto/identity";
import { createSecretCache, type SecretLookup, serviceLookup } from "./secret-cache.js";

/** Resolves a token secret to its principal, or null when the token is unknown or revoked. */
export type PrincipalLookup = SecretLookup<Principal>;

/**
 * A short-lived cache of access token lookups (see createSecretCache), dropped early when identity announces a
 * revocation or a membership change.
 */
export function createPrincipalCache(lookup: PrincipalLookup, opts: { ttlMs: number; max?: number }) {
  const cache = createSecretCache(lookup, {
    ...opts,
    namesOf: (p: Principal) => [
      ...(p.token?.id ? [`token:${p.token.id}`] : []),
      ...(p.user?.id ? [`user:${p.user.id}`] : []),
    ],
  });
  return {
    get: cache.get,
    evictToken(tokenId: string) {
      if (tokenId !== "") cache.evictNamed(`token:${tokenId}`);
    },
    evictUser(userId: string) {
      if (userId !== "") cache.evictNamed(`user:${userId}`);
    },
    clear: cache.clear,
  };
}

export type PrincipalCache = ReturnType<typeof createPrincipalCache>;

/** A lookup backed by the identity service: Unauthenticated means "no such token", anything else is an error. */
export const identityLookup = serviceLookup<Principal>;
