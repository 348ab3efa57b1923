import { type KeyRing, type Logger, openValue, sealValue } from "@conveyor/runtime";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, type KeyLike, SignJWT } from "jose";
import type { OidcClaims } from "./oidc-claims.js";
import type { OidcKeyDoc, OidcKeyRepository } from "./oidc-key-repository.js";
import { expiredKeys, KEY_PUBLISH_LEAD_MS, publishedKeys, signingKey } from "./oidc-keys.js";

/** How the private halves are sealed: bound to their kid, so one key's envelope does not open as another's. */
const ENVELOPE_KIND = { record: "oidc-signing-key", value: "private-jwk" };
/** How long the keys read from the database are reused: well under KEY_PUBLISH_LEAD_MS. */
const KEYS_TTL_MS = 5_000;

export interface OidcSignerDeps {
  keys: OidcKeyRepository;
  keyRing: KeyRing;
  maxLifetimeS: number;
  logger: Logger;
  now: () => Date;
}

/** Raised when no key can sign (none has started, which `ensureKey` at start prevents). */
export class NoSigningKeyError extends Error {
  override name = "NoSigningKeyError";
}

/**
 * The signing keys' custody (docs/security.md#signing-keys-and-rotation): RS256 key pairs made here, their private
 * JWKs sealed under CREDENTIALS_ENCRYPTION_KEY and kept in the agents database, so every replica signs with the
 * same key; tokens signed with `jose`.
 */
export function createOidcSigner(deps: OidcSignerDeps) {
  const { keys, keyRing, now, logger } = deps;
  let cached: { at: number; docs: OidcKeyDoc[] } | undefined;
  const imported = new Map<string, KeyLike | Uint8Array>();

  async function list(fresh = false): Promise<OidcKeyDoc[]> {
    const at = now().getTime();
    if (!fresh && cached && at - cached.at < KEYS_TTL_MS) return cached.docs;
    const docs = await keys.list();
    cached = { at, docs };
    return docs;
  }

  async function makeKey(signsFrom: Date): Promise<OidcKeyDoc> {
    const pair = await generateKeyPair("RS256", { modulusLength: 2048, extractable: true });
    const publicJwk = await exportJWK(pair.publicKey);
    const kid = await calculateJwkThumbprint(publicJwk, "sha256");
    const privateJwk = JSON.stringify({ ...(await exportJWK(pair.privateKey)), kid, alg: "RS256" });
    const doc: OidcKeyDoc = {
      _id: kid,
      kid,
      alg: "RS256",
      publicJwk: { ...publicJwk, kid, alg: "RS256", use: "sig" },
      privateJwk: sealValue(keyRing, ENVELOPE_KIND, kid, privateJwk),
      createdAt: now(),
      signsFrom,
    };
    await keys.insert(doc);
    cached = undefined;
    logger.info({ kid, signsFrom }, "OIDC signing key made");
    return doc;
  }

  async function privateKeyOf(doc: OidcKeyDoc): Promise<KeyLike | Uint8Array> {
    const known = imported.get(doc.kid);
    if (known) return known;
    const jwk = JSON.parse(openValue(keyRing, ENVELOPE_KIND, doc.kid, doc.privateJwk)) as JWK;
    const key = await importJWK(jwk, "RS256");
    imported.set(doc.kid, key);
    return key;
  }

  return {
    /** Makes a first key when there is none (at start): it signs at once, no token having been verified yet. */
    async ensureKey(): Promise<void> {
      if ((await list(true)).length === 0) await makeKey(now());
    },

    /** A new key that signs from KEY_PUBLISH_LEAD_MS from now; the previous one stays published. */
    rotate: () => makeKey(new Date(now().getTime() + KEY_PUBLISH_LEAD_MS)),

    /** `claims` signed as a JWT with the current key. */
    async sign(claims: OidcClaims): Promise<string> {
      let key = signingKey(await list(), now());
      if (!key) key = signingKey(await list(true), now());
      if (!key) throw new NoSigningKeyError("no OIDC signing key has started signing");
      return new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: key.kid, typ: "JWT" })
        .setJti(crypto.randomUUID())
        .sign(await privateKeyOf(key));
    },

    /** The published public keys, as a JSON Web Key Set. */
    async keySet(): Promise<{ keys: Array<Record<string, unknown>> }> {
      return { keys: publishedKeys(await list(), now(), deps.maxLifetimeS).map((k) => k.publicJwk) };
    },

    /** Deletes keys no token still needs. */
    async prune(): Promise<number> {
      const gone = expiredKeys(await list(true), now(), deps.maxLifetimeS).map((k) => k.kid);
      await keys.remove(gone);
      for (const kid of gone) imported.delete(kid);
      if (gone.length > 0) cached = undefined;
      return gone.length;
    },
  };
}

export type OidcSigner = ReturnType<typeof createOidcSigner>;
