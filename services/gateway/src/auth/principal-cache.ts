import { createHash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Principal } from "@conveyor/proto/identity";
import { LRUCache } from "lru-cache";

/** Resolves a token secret to its principal, or null when the token is unknown or revoked. */
export type PrincipalLookup = (secret: string, requestId: string) => Promise<Principal | null>;

interface Entry {
  principal: Principal | null;
}

/** How long an unknown token's answer is remembered, so a flood of bad tokens does not reach identity. */
const NEGATIVE_TTL_MS = 1_000;

/**
 * A short-lived cache of token lookups: concurrent lookups of one token share a single RPC, and entries are
 * dropped early when identity announces a revocation or a membership change.
 */
export function createPrincipalCache(lookup: PrincipalLookup, opts: { ttlMs: number; max?: number }) {
  const cache = new LRUCache<string, Entry, string>({
    max: opts.max ?? 10_000,
    ttl: Math.max(opts.ttlMs, 1),
    fetchMethod: async (_key, _stale, { context, options }) => {
      const [secret, requestId] = JSON.parse(context) as [string, string];
      const principal = await lookup(secret, requestId);
      if (!principal) options.ttl = Math.min(NEGATIVE_TTL_MS, opts.ttlMs || 1);
      return { principal };
    },
  });
  const keyOf = (secret: string) => createHash("sha256").update(secret).digest("base64");
  const evictWhere = (pred: (p: Principal) => boolean) => {
    for (const [key, entry] of cache.entries()) {
      if (entry.principal && pred(entry.principal)) cache.delete(key);
    }
  };
  return {
    async get(secret: string, requestId: string): Promise<Principal | null> {
      if (opts.ttlMs === 0) return lookup(secret, requestId);
      const entry = await cache.fetch(keyOf(secret), { context: JSON.stringify([secret, requestId]) });
      return entry?.principal ?? null;
    },
    evictToken(tokenId: string) {
      evictWhere((p) => p.token?.id === tokenId);
    },
    evictUser(userId: string) {
      evictWhere((p) => p.user?.id === userId);
    },
    clear() {
      cache.clear();
    },
  };
}

export type PrincipalCache = ReturnType<typeof createPrincipalCache>;

/** A lookup backed by the identity service: Unauthenticated means "no such token", anything else is an error. */
export function identityLookup(
  authenticate: (secret: string, requestId: string) => Promise<Principal | undefined>,
): PrincipalLookup {
  return async (secret, requestId) => {
    try {
      return (await authenticate(secret, requestId)) ?? null;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) return null;
      throw err;
    }
  };
}
