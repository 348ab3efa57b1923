/**
 * The words of a commit status: its description in Buildkite's style ("Build #12 passed (1 minute, 3 seconds)") and
 * the bounds every forge accepts (docs/statuses.md#what-is-published). Pure.
 */

/** GitHub refuses a description over 140 characters; the other forges take at least as much. */
export const MAX_STATUS_DESCRIPTION_LENGTH = 140;
/** GitLab's `name` and GitHub's `context` are bounded by 255 characters. */
export const MAX_STATUS_CONTEXT_LENGTH = 255;

/** "1 hour, 2 minutes, 3 seconds", its zero units left out; "0 seconds" for less than a second. */
export function formatDuration(milliseconds: number): string {
  const total = Math.max(0, Math.floor(Number.isFinite(milliseconds) ? milliseconds / 1000 : 0));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const parts = [
    hours > 0 ? unit(hours, "hour") : "",
    minutes > 0 ? unit(minutes, "minute") : "",
    seconds > 0 ? unit(seconds, "second") : "",
  ].filter((p) => p !== "");
  return parts.length === 0 ? "0 seconds" : parts.join(", ");
}

/** The text cut to `max` characters (whole code points, an ellipsis last when cut), control characters spaced. */
export function boundedText(text: string, max: number): string {
  const clean = Array.from(text, (c) => (isControl(c) ? " " : c))
    .join("")
    .replace(/ {2,}/g, " ")
    .trim();
  const points = Array.from(clean);
  if (points.length <= max) return clean;
  return `${points
    .slice(0, max - 1)
    .join("")
    .trimEnd()}…`;
}

/** " (1 minute, 3 seconds)" when both times are known, else "". */
export function durationSuffix(startedAt: Date | null, finishedAt: Date | null): string {
  if (startedAt === null || finishedAt === null) return "";
  return ` (${formatDuration(finishedAt.getTime() - startedAt.getTime())})`;
}

function isControl(character: string): boolean {
  const code = character.codePointAt(0) ?? 0;
  return code < 0x20 || code === 0x7f;
}
