import { createHash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";

/**
 * Resolves a secret to what it stands for, or null when it is unknown, revoked or expired. It runs in the context of
 * the request that asked first, so its RPC carries that request's id (the client's interceptor reads the context).
 */
export type SecretLookup<T> = (secret: string) => Promise<T | null>;

interface Entry<T> {
  value: T | null;
}

/** How long an unknown secret's answer is remembered, so a flood of bad secrets does not reach the service. */
const NEGATIVE_TTL_MS = 1_000;

/**
 * A short-lived cache of secret lookups (access tokens, agent credentials): concurrent lookups of one secret share
 * a single RPC, secrets are kept only as SHA-256 digests, and entries are dropped early when their service announces
 * a revocation. A TTL of 0 turns caching off.
 */
export function createSecretCache<T extends object>(lookup: SecretLookup<T>, opts: { ttlMs: number; max?: number }) {
  const cache = new LRUCache<string, Entry<T>, string>({
    max: opts.max ?? 10_000,
    ttl: Math.max(opts.ttlMs, 1),
    fetchMethod: async (_key, _stale, { context: secret, options }) => {
      const value = await lookup(secret);
      if (!value) options.ttl = Math.min(NEGATIVE_TTL_MS, opts.ttlMs || 1);
      return { value };
    },
  });
  const keyOf = (secret: string) => createHash("sha256").update(secret).digest("base64");
  return {
    async get(secret: string): Promise<T | null> {
      if (opts.ttlMs === 0) return lookup(secret);
      const entry = await cache.fetch(keyOf(secret), { context: secret });
      return entry?.value ?? null;
    },
    /** Drops every cached answer `pred` picks. */
    evictWhere(pred: (value: T) => boolean): void {
      for (const [key, entry] of cache.entries()) {
        if (entry.value && pred(entry.value)) cache.delete(key);
      }
    },
    clear(): void {
      cache.clear();
    },
  };
}

export type SecretCache<T extends object> = ReturnType<typeof createSecretCache<T>>;

/** A lookup backed by a service: Unauthenticated means "no such secret", anything else is an error. */
export function serviceLookup<T>(authenticate: (secret: string) => Promise<T | undefined>): SecretLookup<T> {
  return async (secret) => {
    try {
      return (await authenticate(secret)) ?? null;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) return null;
      throw err;
    }
  };
}
