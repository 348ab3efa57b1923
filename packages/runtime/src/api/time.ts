import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";

/** A protobuf Timestamp from a Date, or undefined for a missing date. */
export function toTimestamp(date: Date | null | undefined): Timestamp | undefined {
  return date ? timestampFromDate(date) : undefined;
}

/** The REST form of a timestamp: ISO 8601 UTC with milliseconds and Z, or null when unset. */
export function isoTime(ts: Timestamp | undefined): string | null {
  return ts ? timestampDate(ts).toISOString() : null;
}
