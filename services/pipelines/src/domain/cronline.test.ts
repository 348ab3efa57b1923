import { type Cronline, parseCronline } from "./cronline.js";

const at = (iso: string) => new Date(iso);
function parsed(text: string): Cronline {
  const cron = parseCronline(text);
  if (typeof cron === "string") throw new Error(`${text}: ${cron}`);
  return cron;
}
/** The next `count` times after `from`, as ISO strings. */
function runs(text: string, from: string, count = 3): string[] {
  const cron = parsed(text);
  const out: string[] = [];
  let after = at(from);
  for (let i = 0; i < count; i++) {
    const next = cron.next(after);
    if (!next) break;
    out.push(next.toISOString());
    after = next;
  }
  return out;
}

describe("parseCronline", () => {
  it.each([
    ["@hourly", "2026-03-01T10:30:00.000Z", "2026-03-01T11:00:00.000Z"],
    ["@daily", "2026-03-01T10:30:00.000Z", "2026-03-02T00:00:00.000Z"],
    ["@midnight", "2026-03-01T10:30:00.000Z", "2026-03-02T00:00:00.000Z"],
    // 2026-03-01 is a Sunday: @weekly is Sunday at midnight.
    ["@weekly", "2026-03-01T10:30:00.000Z", "2026-03-08T00:00:00.000Z"],
    ["@monthly", "2026-03-01T10:30:00.000Z", "2026-04-01T00:00:00.000Z"],
    ["@yearly", "2026-03-01T10:30:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["@annually", "2026-03-01T10:30:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["@DAILY", "2026-03-01T10:30:00.000Z", "2026-03-02T00:00:00.000Z"],
  ])("reads the shorthand %s", (line, from, next) => {
    expect(parsed(line).next(at(from))?.toISOString()).toBe(next);
  });

  it("reads five fields in UTC when no zone is given", () => {
    expect(runs("*/15 9-10 * * 1-5", "2026-03-02T10:40:00Z")).toEqual([
      "2026-03-02T10:45:00.000Z",
      "2026-03-03T09:00:00.000Z",
      "2026-03-03T09:15:00.000Z",
    ]);
  });

  it("gives the first time strictly after the one asked about", () => {
    expect(parsed("0 * * * *").next(at("2026-03-01T11:00:00.000Z"))?.toISOString()).toBe("2026-03-01T12:00:00.000Z");
  });

  it("matches either a restricted day of the month or a restricted day of the week, as Vixie cron", () => {
    expect(runs("0 0 15 * MON", "2026-03-01T00:00:00Z", 4)).toEqual([
      "2026-03-02T00:00:00.000Z",
      "2026-03-09T00:00:00.000Z",
      "2026-03-15T00:00:00.000Z",
      "2026-03-16T00:00:00.000Z",
    ]);
  });

  it("takes an IANA time zone as a last segment", () => {
    expect(runs("0 9 * * * America/New_York", "2026-01-10T00:00:00Z", 1)).toEqual(["2026-01-10T14:00:00.000Z"]);
    expect(runs("@daily Asia/Tokyo", "2026-01-10T00:00:00Z", 1)).toEqual(["2026-01-10T15:00:00.000Z"]);
  });

  it.each([
    ["0 9 * * * +05:30", "2026-03-01T03:30:00.000Z"],
    ["0 9 * * * -0800", "2026-03-01T17:00:00.000Z"],
    ["0 9 * * * +02", "2026-03-01T07:00:00.000Z"],
    ["0 9 * * * Z", "2026-03-01T09:00:00.000Z"],
    ["0 9 * * * UTC", "2026-03-01T09:00:00.000Z"],
  ])("takes a UTC offset or UTC: %s", (line, next) => {
    expect(parsed(line).next(at("2026-03-01T00:00:00Z"))?.toISOString()).toBe(next);
  });

  it("keeps local time across daylight saving: 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer", () => {
    expect(runs("0 9 * * * Europe/Berlin", "2026-03-28T00:00:00Z")).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z",
    ]);
  });

  it("runs a local time the spring change skips at the first instant after the gap, once", () => {
    // 02:30 does not exist in Berlin on 2026-03-29: clocks go from 02:00 to 03:00 (01:00 UTC).
    expect(runs("30 2 * * * Europe/Berlin", "2026-03-28T00:00:00Z")).toEqual([
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  it("runs a local time the autumn change repeats once, at its first occurrence", () => {
    // 02:30 happens twice in Berlin on 2026-10-25 (00:30 and 01:30 UTC).
    expect(runs("30 2 * * * Europe/Berlin", "2026-10-24T00:00:00Z")).toEqual([
      "2026-10-24T00:30:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it.each([
    ["", "can't be blank"],
    ["   ", "can't be blank"],
    ["@sometimes", "has an unknown shorthand: @sometimes"],
    ["* * * *", "must be a shorthand such as @daily or five cron fields"],
    ["* * * * * * *", "must be a shorthand such as @daily or five cron fields"],
    ["@daily UTC extra", "must be a shorthand such as @daily or five cron fields"],
    ["* * * * * *", "has an unknown time zone: *"],
    ["0 0 * * * Mars/Olympus", "has an unknown time zone: Mars/Olympus"],
    ["0 0 * * * +15:00", "has an offset out of range: +15:00"],
    ["0 0 * * * +05:75", "has an offset out of range: +05:75"],
    ["61 * * * *", "is not a valid cron line"],
    ["0 25 * * *", "is not a valid cron line"],
    ["a b c d e", "is not a valid cron line"],
    ["0 0 31 2 *", "never comes round"],
    [`0 0 * * * ${"A".repeat(260)}`, "is too long (maximum is 255 characters)"],
  ])("refuses %j: %s", (line, problem) => {
    const result = parseCronline(line);
    expect(typeof result).toBe("string");
    expect(result).toEqual(expect.stringContaining(problem));
  });
});
