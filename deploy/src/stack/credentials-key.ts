import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

/**
 * The key the notifications service seals source-provider credentials with (CREDENTIALS_ENCRYPTION_KEY; docs/security.md#source-provider-credentials):
 * the one the launcher's environment gives, else the one kept in the data directory, made once (32 random bytes,
 * base64, readable by its owner only). Losing the file loses the stored credentials (their connections must be added
 * again); rotating it is docs/operations.md#rotating-the-credentials-key.
 */
export function credentialsKey(file: string, fromEnv: string | undefined): string {
  const given = fromEnv?.trim();
  if (given) return given;
  if (existsSync(file)) {
    const kept = readFileSync(file, "utf8").trim();
    if (kept !== "") return kept;
  }
  const made = randomBytes(32).toString("base64");
  writeFileSync(file, `${made}\n`, { mode: 0o600, flag: "w" });
  return made;
}
