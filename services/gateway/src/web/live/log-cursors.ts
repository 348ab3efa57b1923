/**
 * Where a live page is in each log it follows: job id → the byte offset it has the log up to (the end of its last
 * complete line). The live stream sends them all as each log event's id, so that the Last-Event-ID a browser sends
 * when it reconnects resumes every log exactly where it was (docs/pages.md#live-updates).
 */
export type LogCursors = Map<string, number>;

/** The most logs one page follows at once. */
export const MAX_FOLLOWED_LOGS = 20;

/** A job id as the cursors carry it (UUIDs, and the tests' short ids). */
const JOB_ID = /^[A-Za-z0-9-]{1,64}$/;
/** Offsets beyond any log (logs are at most 256 MiB by default; docs/limits.md) are refused, not followed. */
const MAX_OFFSET = 2 ** 40;

/** `jobId:offset,jobId:offset`, the form of a cursor list in an event id and in the live URL's `logs` parameter. */
export function formatCursors(cursors: LogCursors): string {
  return [...cursors].map(([job, offset]) => `${job}:${offset}`).join(",");
}

/**
 * Reads a cursor list; null when it is malformed or names more than MAX_FOLLOWED_LOGS jobs. An empty text is an
 * empty list. A job named twice keeps its last offset.
 */
export function parseCursors(text: string): LogCursors | null {
  const cursors: LogCursors = new Map();
  if (text === "") return cursors;
  const parts = text.split(",");
  if (parts.length > MAX_FOLLOWED_LOGS) return null;
  for (const part of parts) {
    const colon = part.lastIndexOf(":");
    const job = part.slice(0, colon);
    const offset = Number(part.slice(colon + 1));
    if (colon < 0 || !JOB_ID.test(job) || !/^\d{1,13}$/.test(part.slice(colon + 1)) || offset > MAX_OFFSET) return null;
    cursors.set(job, offset);
  }
  return cursors;
}
