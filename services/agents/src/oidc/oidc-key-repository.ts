import type { SealedEnvelope } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import type { OidcKeyInfo } from "./oidc-keys.js";

/** An OIDC signing key as stored: its public JWK, and its private JWK only sealed (binding: its kid). */
export interface OidcKeyDoc extends OidcKeyInfo {
  _id: string;
  alg: "RS256";
  /** The public key as a JWK (with its kid, alg and use). */
  publicJwk: Record<string, unknown>;
  /** The private JWK, sealed (`packages/runtime/src/crypto/envelope.ts`). Never answered, never logged. */
  privateJwk: SealedEnvelope;
}

/** Persistence of the signing keys: few (one or two at a time), all read at once. */
export interface OidcKeyRepository {
  list(): Promise<OidcKeyDoc[]>;
  insert(key: OidcKeyDoc): Promise<void>;
  remove(kids: string[]): Promise<void>;
}

/** The keys in the agents database's `oidc_keys` collection. */
export function createMongoOidcKeyRepository(db: Db): OidcKeyRepository {
  const keys: Collection<OidcKeyDoc> = db.collection<OidcKeyDoc>("oidc_keys");
  return {
    list: () => keys.find({}).limit(100).toArray(),
    async insert(key) {
      await keys.insertOne(key);
    },
    async remove(kids) {
      if (kids.length > 0) await keys.deleteMany({ _id: { $in: kids } });
    },
  };
}

/** An in-memory repository for unit tests. */
export function createMemoryOidcKeyRepository(): OidcKeyRepository & { docs: OidcKeyDoc[] } {
  const docs: OidcKeyDoc[] = [];
  return {
    docs,
    list: async () => docs.map((d) => structuredClone(d)),
    async insert(key) {
      docs.push(structuredClone(key));
    },
    async remove(kids) {
      for (const kid of kids) {
        const at = docs.findIndex((d) => d._id === kid);
        if (at >= 0) docs.splice(at, 1);
      }
    },
  };
}
