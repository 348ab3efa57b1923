import { type Env, readEncryptionKeyRing } from "@conveyor/runtime";
import type { KeyRing } from "./credential-envelope.js";

/** The source-provider connections' settings (docs/configuration.md#the-notifications-service). */
export interface ProvidersConfig {
  /** The keys credentials are sealed with; null when CREDENTIALS_ENCRYPTION_KEY is unset (no connection can be added). */
  readonly keyRing: KeyRing | null;
}

/** Reads CREDENTIALS_ENCRYPTION_KEY and CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS once; a malformed key stops the process. */
export function readProvidersConfig(env: Env): ProvidersConfig {
  return Object.freeze({ keyRing: readEncryptionKeyRing(env) });
}
