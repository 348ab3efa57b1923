import { createHash, randomBytes } from "node:crypto";

/** A new webhook URL token: 24 random bytes as hex. */
export function newWebhookToken(): string {
  return randomBytes(24).toString("hex");
}

/**
 * What a pipeline is found by from its webhook URL: the token's SHA-256 as hex. Looking up the hash instead of the
 * token means an index walk compares hashes, whose prefixes a guesser cannot steer, so the time a lookup takes says
 * nothing about how close a guessed token came.
 */
export function webhookTokenHash(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}
