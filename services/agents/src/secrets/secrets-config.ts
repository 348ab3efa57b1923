import { createEnvReader, type Env, type KeyRing, readEncryptionKeyRing } from "@conveyor/runtime";

/** The cluster secrets' settings (docs/configuration.md#the-agents-service). */
export interface SecretsConfig {
  /** The keys values are sealed with; null when CREDENTIALS_ENCRYPTION_KEY is unset (no secret can be made or read). */
  readonly keyRing: KeyRing | null;
  /** How long a read of a secret is kept, in days. */
  readonly readsRetentionDays: number;
}

/** Reads CREDENTIALS_ENCRYPTION_KEY, CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS and SECRET_READS_RETENTION_DAYS once. */
export function readSecretsConfig(env: Env): SecretsConfig {
  const r = createEnvReader(env);
  return Object.freeze({
    keyRing: readEncryptionKeyRing(env),
    readsRetentionDays: r.int("SECRET_READS_RETENTION_DAYS", 90, { min: 1, max: 3650 }),
  });
}
