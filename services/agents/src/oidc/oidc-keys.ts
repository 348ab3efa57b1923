/**
 * Which OIDC signing key signs, and which keys the key set publishes (docs/security.md#signing-keys-and-rotation).
 * Pure. A key is published from the moment it is made but signs only from `signsFrom`, after every gateway's
 * cached key set has it; it stops signing when a newer key starts, and leaves the key set once every token it
 * signed has expired (the longest lifetime, and a minute for clocks, after the newer key started).
 */

/** A signing key as the rules see it. */
export interface OidcKeyInfo {
  kid: string;
  createdAt: Date;
  signsFrom: Date;
}

/** How long after a key is made it starts signing: longer than the gateways' key-set cache. */
export const KEY_PUBLISH_LEAD_MS = 15_000;
/** Allowance for verifiers' clocks when a retired key leaves the key set. */
const CLOCK_SKEW_MS = 60_000;

const newestFirst = (a: OidcKeyInfo, b: OidcKeyInfo) =>
  b.signsFrom.getTime() - a.signsFrom.getTime() || (a.kid < b.kid ? 1 : a.kid > b.kid ? -1 : 0);

/** The key that signs at `now`: the one that started last (ties: the greatest kid); undefined when none has. */
export function signingKey<K extends OidcKeyInfo>(keys: readonly K[], now: Date): K | undefined {
  return [...keys].filter((k) => k.signsFrom.getTime() <= now.getTime()).sort(newestFirst)[0];
}

/** The keys the key set holds at `now`: those to come, the signing key, and those retired too recently to drop. */
export function publishedKeys<K extends OidcKeyInfo>(keys: readonly K[], now: Date, maxLifetimeS: number): K[] {
  const current = signingKey(keys, now);
  const keep = maxLifetimeS * 1000 + CLOCK_SKEW_MS;
  const sorted = [...keys].sort(newestFirst);
  return sorted.filter((k, i) => {
    if (k.signsFrom.getTime() > now.getTime() || k === current) return true;
    // A key stopped signing when the next newer key that has started did.
    const successor = sorted
      .slice(0, i)
      .reverse()
      .find((s) => s.signsFrom.getTime() <= now.getTime());
    return successor === undefined || now.getTime() - successor.signsFrom.getTime() < keep;
  });
}

/** Keys that may be deleted: no longer published, and made before `now`. */
export function expiredKeys<K extends OidcKeyInfo>(keys: readonly K[], now: Date, maxLifetimeS: number): K[] {
  const kept = new Set(publishedKeys(keys, now, maxLifetimeS));
  return keys.filter((k) => !kept.has(k));
}
