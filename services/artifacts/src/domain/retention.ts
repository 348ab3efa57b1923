/** The longest retention an organization may choose, in days (ten years). */
export const MAX_RETENTION_DAYS = 3650;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Whether a retention in days can be stored (1 to MAX_RETENTION_DAYS). */
export function isValidRetention(days: number): boolean {
  return Number.isInteger(days) && days >= 1 && days <= MAX_RETENTION_DAYS;
}

/** Artifacts created before this moment have outlived a retention of `days`. */
export function expiryCutoff(now: Date, days: number): Date {
  return new Date(now.getTime() - days * DAY_MS);
}
