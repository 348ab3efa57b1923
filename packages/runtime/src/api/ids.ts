import { createHash, randomBytes, randomUUID } from "node:crypto";

/** A new record id: a random UUID. */
export function newId(): string {
  return randomUUID();
}

/** A new secret with a recognisable prefix, for example "bkua_" + 40 hex characters. */
export function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(20).toString("hex")}`;
}

/** The SHA-256 hex digest under which a secret is stored; the secret itself never is. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when the value looks like a UUID. */
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
