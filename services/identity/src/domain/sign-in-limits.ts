/**
 * The limits on failed sign-ins (docs/pages.md#signing-in): so many failures per account, and so many per client
 * address, in a fixed window of time; past either, sign-in is refused until the window ends, whatever the password.
 * Accounts are counted by the email address typed, whether or not a user has it, so that a refusal does not tell
 * whether an account exists.
 */

import { createHash } from "node:crypto";

/** How many failures are allowed, per account and per address, in each window. */
export interface SignInLimits {
  readonly accountFailures: number;
  readonly addressFailures: number;
  readonly windowMs: number;
}

/** 10 failures per account and 50 per address in 15 minutes. */
export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = Object.freeze({
  accountFailures: 10,
  addressFailures: 50,
  windowMs: 15 * 60_000,
});

/** What a count is kept for: the account (an email address as typed) or the client's address. */
export type LimitedKind = "account" | "address";

/** The fixed window `now` falls in. */
export function failureWindow(now: Date, windowMs: number): { start: Date; end: Date } {
  const start = Math.floor(now.getTime() / windowMs) * windowMs;
  return { start: new Date(start), end: new Date(start + windowMs) };
}

/**
 * The key a count is stored under: a SHA-256 digest, so that what people type in the email field (sometimes a
 * password) is not kept as it was typed.
 */
export function limitKey(kind: LimitedKind, value: string): string {
  const normalized = kind === "account" ? value.trim().toLowerCase() : value.trim();
  return `${kind}:${createHash("sha256").update(normalized, "utf8").digest("hex")}`;
}

/** Which limit, if any, counts past their maximum exceed (the account's first). */
export function exceededLimit(
  counts: Readonly<Record<LimitedKind, number>>,
  limits: SignInLimits,
): LimitedKind | undefined {
  if (counts.account > limits.accountFailures) return "account";
  if (counts.address > limits.addressFailures) return "address";
  return undefined;
}

/** The answer to a refused sign-in: what was exceeded, and when to try again. */
export function limitMessage(kind: LimitedKind, until: Date): string {
  const what = kind === "account" ? "for this account" : "from this address";
  const time = until.toISOString().replace(/\.\d{3}Z$/, "Z");
  return `Too many failed sign-ins ${what}. Try again after ${time.slice(11, 16)} UTC (${time}).`;
}
