import { ConfigError, createEnvReader, type Env, type KeyRing, readEncryptionKeyRing } from "@conveyor/runtime";

/** The OIDC tokens' settings (docs/configuration.md#the-agents-service). */
export interface OidcConfig {
  /** The keys the signing keys' private halves are sealed with; null when CREDENTIALS_ENCRYPTION_KEY is unset. */
  readonly keyRing: KeyRing | null;
  /** A token's lifetime when the job asks for none, in seconds. */
  readonly defaultLifetimeS: number;
  /** The longest lifetime a job may ask for, in seconds; a retired key stays published this long (and a minute). */
  readonly maxLifetimeS: number;
}

/** Reads CREDENTIALS_ENCRYPTION_KEY (and its previous keys), OIDC_TOKEN_LIFETIME_S and OIDC_MAX_TOKEN_LIFETIME_S once. */
export function readOidcConfig(env: Env): OidcConfig {
  const r = createEnvReader(env);
  const maxLifetimeS = r.int("OIDC_MAX_TOKEN_LIFETIME_S", 7_200, { min: 60, max: 86_400 });
  const defaultLifetimeS = r.int("OIDC_TOKEN_LIFETIME_S", 300, { min: 60, max: 86_400 });
  if (defaultLifetimeS > maxLifetimeS) {
    throw new ConfigError("OIDC_TOKEN_LIFETIME_S must not be longer than OIDC_MAX_TOKEN_LIFETIME_S");
  }
  return Object.freeze({ keyRing: readEncryptionKeyRing(env), defaultLifetimeS, maxLifetimeS });
}
