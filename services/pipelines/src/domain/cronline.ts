/**
 * A schedule's cron line (docs/compatibility.md#pipeline-schedules): `@hourly` … `@yearly`, or five cron fields, each
 * with an optional IANA time zone (`Europe/Berlin`) or UTC offset (`+05:30`) as a last segment; UTC without one.
 * The times are croner's, a dependency-free cron library: a local time a daylight-saving change skips runs at the
 * first instant after the gap, and one it repeats runs once, at its first occurrence.
 */

import { Cron } from "croner";

/** The shorthands Buildkite accepts, as the five fields they stand for. */
export const CRON_SHORTHANDS: Readonly<Record<string, string>> = {
  "@hourly": "0 * * * *",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@weekly": "0 0 * * 0",
  "@monthly": "0 0 1 * *",
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
};

/** The longest cron line stored. */
export const MAX_CRONLINE_LENGTH = 255;

/** A parsed cron line: when it comes round next. */
export interface Cronline {
  /** The first time strictly after `after` the line matches, or null when it never does again. */
  next(after: Date): Date | null;
}

/** A UTC offset such as `+05:30`, `-0800` or `+09`. */
const OFFSET = /^([+-])(\d{2}):?(\d{2})?$/;

/** The zone segment as croner's options, or why it is not one. */
function zoneOptions(zone: string): { timezone: string } | { utcOffset: number } | string {
  const offset = OFFSET.exec(zone);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3] ?? 0);
    if (minutes > 14 * 60 || Number(offset[3] ?? 0) >= 60) return `has an offset out of range: ${zone}`;
    return { utcOffset: offset[1] === "-" ? -minutes : minutes };
  }
  if (zone === "Z") return { timezone: "UTC" };
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return { timezone: zone };
  } catch {
    // Intl throws a RangeError for a name it does not know, which is the answer here.
    return `has an unknown time zone: ${zone}`;
  }
}

/** Parses a cron line; a string saying what is wrong with it (a 422 `code` for the field `cronline`) otherwise. */
export function parseCronline(text: string): Cronline | string {
  const line = text.trim();
  if (line === "") return "can't be blank";
  if (line.length > MAX_CRONLINE_LENGTH) return `is too long (maximum is ${MAX_CRONLINE_LENGTH} characters)`;
  const parts = line.split(/\s+/);
  const shorthand = parts[0]?.startsWith("@") ? CRON_SHORTHANDS[parts[0].toLowerCase()] : undefined;
  if (parts[0]?.startsWith("@") && shorthand === undefined)
    return `has an unknown shorthand: ${parts[0]} (use ${Object.keys(CRON_SHORTHANDS).join(", ")})`;
  const fieldCount = shorthand === undefined ? 5 : 1;
  if (parts.length < fieldCount || parts.length > fieldCount + 1)
    return "must be a shorthand such as @daily or five cron fields, optionally followed by a time zone";
  const fields = shorthand ?? parts.slice(0, 5).join(" ");
  const zone = parts.length > fieldCount ? zoneOptions(parts[fieldCount] ?? "") : { timezone: "UTC" };
  if (typeof zone === "string") return zone;
  let cron: Cron;
  try {
    // domAndDow false: a day-of-month and a day-of-week both restricted match either, as in Vixie cron.
    cron = new Cron(fields, { paused: true, mode: "5-part", domAndDow: false, ...zone });
  } catch (err) {
    return `is not a valid cron line: ${err instanceof Error ? err.message.replace(/^CronPattern: /, "") : String(err)}`;
  }
  const next = (after: Date) => cron.nextRun(after);
  // A line such as "0 0 31 2 *" parses but never matches: nothing would ever be built.
  if (next(new Date()) === null) return "never comes round (no date matches it)";
  return { next };
}
