/**
 * When a delivery is tried again (docs/notifications.md#delivery): exponential backoff from `baseMs`, doubled per
 * attempt up to `maxMs`, with up to 20% jitter so that deliveries failed together do not come back together; never
 * after `giveUpAt` nor beyond `maxAttempts`. Pure: the clock and the randomness are passed in.
 */
export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  maxAttempts: number;
}

/** What one attempt came to, as a channel reports it. */
export interface AttemptOutcome {
  ok: boolean;
  /** The HTTP status (or SMTP reply code) answered; 0 when nothing answered. */
  responseCode: number;
  /** Why it failed; empty when it succeeded. */
  error: string;
  /** Whether trying again may help (a timeout, a 5xx, a 429); a refused address or a 4xx will not. */
  retryable: boolean;
}

/** The delay before attempt `attempts + 1`, after `attempts` failed ones (1 or more). */
export function backoffMs(policy: RetryPolicy, attempts: number, random: number): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(attempts - 1, 30)));
  return Math.round(exp * (1 + 0.2 * Math.min(Math.max(random, 0), 1)));
}

/** What happens to a delivery after an attempt: done, tried again at `nextAt`, or given up. */
export type NextStep = { status: "succeeded" } | { status: "pending"; nextAt: Date } | { status: "failed" };

export function nextStep(
  policy: RetryPolicy,
  outcome: AttemptOutcome,
  attempts: number,
  giveUpAt: Date,
  now: Date,
  random: number,
): NextStep {
  if (outcome.ok) return { status: "succeeded" };
  if (!outcome.retryable || attempts >= policy.maxAttempts) return { status: "failed" };
  const nextAt = new Date(now.getTime() + backoffMs(policy, attempts, random));
  return nextAt.getTime() > giveUpAt.getTime() ? { status: "failed" } : { status: "pending", nextAt };
}

/** Whether an HTTP status is worth trying again: 408, 425, 429 and 5xx. */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}
