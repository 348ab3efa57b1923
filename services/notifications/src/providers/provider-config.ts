import { ConfigError, type Env } from "@conveyor/runtime";
import { type KeyRing, keyRingFrom } from "./credential-envelope.js";

/** The source-provider connections' settings (docs/configuration.md#the-notifications-service). */
export interface ProvidersConfig {
  /** The keys credentials are sealed with; null when CREDENTIALS_ENCRYPTION_KEY is unset (no connection can be added). */
  readonly keyRing: KeyRing | null;
}

/** Reads CREDENTIALS_ENCRYPTION_KEY and CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS once; a malformed key stops the process. */
export function readProvidersConfig(env: Env): ProvidersConfig {
  const current = (env.CREDENTIALS_ENCRYPTION_KEY ?? "").trim();
  const previous = (env.CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS ?? "").trim();
  if (current === "") {
    if (previous !== "") {
      throw new ConfigError("CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS is set without CREDENTIALS_ENCRYPTION_KEY");
    }
    return Object.freeze({ keyRing: null });
  }
  try {
    return Object.freeze({ keyRing: keyRingFrom(current, previous) });
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
}
