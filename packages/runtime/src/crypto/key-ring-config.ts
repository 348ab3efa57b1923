import type { Env } from "../process/config.js";
import { ConfigError } from "../process/config.js";
import { type KeyRing, keyRingFrom } from "./envelope.js";

/**
 * Reads `CREDENTIALS_ENCRYPTION_KEY` and `CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS` once (docs/configuration.md): null
 * when the key is unset (nothing can be sealed or opened); a malformed key, or previous keys without a current one,
 * stops the process naming the variable.
 */
export function readEncryptionKeyRing(env: Env): KeyRing | null {
  const current = (env.CREDENTIALS_ENCRYPTION_KEY ?? "").trim();
  const previous = (env.CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS ?? "").trim();
  if (current === "") {
    if (previous !== "") {
      throw new ConfigError("CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS is set without CREDENTIALS_ENCRYPTION_KEY");
    }
    return null;
  }
  try {
    return keyRingFrom(current, previous);
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
}
