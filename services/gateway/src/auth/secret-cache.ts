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

export interface SecretCacheOptions<T> {
  ttlMs: number;
  max?: number;
  /**
   * The names a cached answer is dropped by (`evictNamed`): the token, user, agent or job it stands for, say. An
   * announced revocation then costs a lookup of its name, not a scan of every cached answer (a job's end revokes its
   * token, and a gateway holding thousands of agents' credentials heard hundreds of those a minute).
   */
  namesOf?: (value: T) => readonly string[];
}

/**
 * A short-lived cache of secret lookups (access tokens, agent credentials): concurrent lookups of one secret share
 * a single RPC, secrets are kept only as SHA-256 digests, and entries are dropped early when their service announces
 * a revocation. A TTL of 0 turns caching off.
 */
export function createSecretCache<T extends object>(lookup: SecretLookup<T>, opts: SecretCacheOptions<T>) {
  /** The keys of the cached answers under each name; an answer leaves it when it leaves the cache. */
  const named = new Map<string, Set<string>>();
  const unname = (key: string, value: T | null) => {
    if (!value || !opts.namesOf) return;
    for (const name of opts.namesOf(value)) {
      const keys = named.get(name);
      keys?.delete(key);
      if (keys?.size === 0) named.delete(name);
    }
  };
  const cache = new LRUCache<string, Entry<T>, string>({
    max: opts.max ?? 10_000,
    ttl: Math.max(opts.ttlMs, 1),
    fetchMethod: async (_key, _stale, { context: secret, options }) => {
      const value = await lookup(secret);
      if (!value) options.ttl = Math.min(NEGATIVE_TTL_MS, opts.ttlMs || 1);
      return { value };
    },
    // Told of an answer stored (named) and of one leaving (expired, evicted, replaced, deleted: unnamed).
    onInsert: (entry, key) => {
      if (!entry.value || !opts.namesOf) return;
      for (const name of opts.namesOf(entry.value)) {
        const keys = named.get(name) ?? new Set<string>();
        keys.add(key);
        named.set(name, keys);
      }
    },
    dispose: (entry, key) => unname(key, entry.value),
  });
  const keyOf = (secret: string) => createHash("sha256").update(secret).digest("base64");
  return {
    async get(secret: string): Promise<T | null> {
      if (opts.ttlMs === 0) return lookup(secret);
      const entry = await cache.fetch(keyOf(secret), { context: secret });
      return entry?.value ?? null;
    },
    /** Drops every cached answer with this name (see `namesOf`). */
    evictNamed(name: string): void {
      for (const key of [...(named.get(name) ?? [])]) cache.delete(key);
    },
    clear(): void {
      cache.clear();
      named.clear();
    },
    /** How many names are indexed (for tests: the index follows the cache). */
    get namedCount(): number {
      return named.size;
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
