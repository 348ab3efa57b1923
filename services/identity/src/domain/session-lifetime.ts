/**
 * How long a session of the pages and a one-time sign-in link live (docs/pages.md#signing-in): a session ends when
 * it has not been used for the idle time, and at the latest the maximum time after it began; using it moves the idle
 * end on, written at most once per refresh interval so that a busy person does not cause a write per request.
 */

/** A session's lifetimes, in milliseconds. */
export interface SessionLifetime {
  readonly idleMs: number;
  readonly maxMs: number;
  /** The least time between two writes of a session's last use. */
  readonly refreshMs: number;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** 14 days idle, 30 days at most, last use written at most every 5 minutes. */
export const DEFAULT_SESSION_LIFETIME: SessionLifetime = Object.freeze({
  idleMs: 14 * DAY,
  maxMs: 30 * DAY,
  refreshMs: 5 * MINUTE,
});

/** A sign-in link's validity when none is asked for, and the longest that may be asked for, in seconds. */
export const DEFAULT_LINK_VALIDITY_S = 15 * 60;
export const MAX_LINK_VALIDITY_S = 24 * 60 * 60;

/** The times a session has. */
export interface SessionTimes {
  createdAt: Date;
  lastSeenAt: Date;
  idleExpiresAt: Date;
  expiresAt: Date;
}

/** The times of a session beginning now. */
export function newSessionTimes(now: Date, lifetime: SessionLifetime): SessionTimes {
  const expiresAt = new Date(now.getTime() + lifetime.maxMs);
  return {
    createdAt: now,
    lastSeenAt: now,
    idleExpiresAt: earlier(now.getTime() + lifetime.idleMs, expiresAt),
    expiresAt,
  };
}

/** Whether a session has ended by time: idle too long, or past its maximum. */
export function sessionExpired(s: SessionTimes, now: Date): boolean {
  return now >= s.idleExpiresAt || now >= s.expiresAt;
}

/** The new last use and idle end of a session used now, or undefined while the last written use is recent enough. */
export function sessionRefresh(
  s: SessionTimes,
  now: Date,
  lifetime: SessionLifetime,
): Pick<SessionTimes, "lastSeenAt" | "idleExpiresAt"> | undefined {
  if (now.getTime() - s.lastSeenAt.getTime() < lifetime.refreshMs) return undefined;
  return { lastSeenAt: now, idleExpiresAt: earlier(now.getTime() + lifetime.idleMs, s.expiresAt) };
}

/** A link's validity in seconds from what was asked (0: the default), or why it cannot be given. */
export function linkValidity(askedSeconds: number): { seconds: number } | { problem: string } {
  if (askedSeconds === 0) return { seconds: DEFAULT_LINK_VALIDITY_S };
  if (askedSeconds < 0 || askedSeconds > MAX_LINK_VALIDITY_S) {
    return { problem: `must be between 1 and ${MAX_LINK_VALIDITY_S} seconds (24 hours)` };
  }
  return { seconds: askedSeconds };
}

function earlier(ms: number, limit: Date): Date {
  return new Date(Math.min(ms, limit.getTime()));
}
