import { createHmac } from "node:crypto";

/**
 * Buildkite's webhook signature (docs/notifications.md#headers-and-verifying): `X-Buildkite-Signature:
 * timestamp=<unix seconds>,signature=<hex HMAC-SHA256 of "<timestamp>.<body>" keyed by the webhook's token>`.
 */
export function signatureHeader(token: string, body: string, unixSeconds: number): string {
  const signature = createHmac("sha256", token).update(`${unixSeconds}.${body}`).digest("hex");
  return `timestamp=${unixSeconds},signature=${signature}`;
}
