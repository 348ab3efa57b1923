import { parseCronline } from "./cronline.js";
import { checkScheduleFields, newScheduleFields, nextBuildAfterTick, SCHEDULE_LIMITS } from "./schedule-fields.js";

const fields = (changes: Parameters<typeof newScheduleFields>[0] = {}) =>
  newScheduleFields({ label: "Nightly", cronline: "@daily", ...changes }, "main");
const problemsOf = (changes: Parameters<typeof newScheduleFields>[0]) => {
  const checked = checkScheduleFields(fields(changes));
  return "problems" in checked ? checked.problems : [];
};

describe("newScheduleFields", () => {
  it("defaults to HEAD of the pipeline's default branch, enabled, with no message or env", () => {
    expect(newScheduleFields({ label: "L", cronline: "@daily" }, "trunk")).toEqual({
      label: "L",
      cronline: "@daily",
      message: "",
      commit: "HEAD",
      branch: "trunk",
      env: {},
      enabled: true,
    });
  });

  it("keeps what the request gives", () => {
    expect(fields({ commit: "abc", branch: "release", enabled: false, env: { A: "1" }, message: "m" })).toMatchObject({
      commit: "abc",
      branch: "release",
      enabled: false,
      env: { A: "1" },
      message: "m",
    });
  });
});

describe("checkScheduleFields", () => {
  it("gives the parsed cron line of good fields", () => {
    const checked = checkScheduleFields(fields());
    expect("cron" in checked).toBe(true);
  });

  it.each([
    [{ label: "" }, "label", "can't be blank"],
    [{ label: "x".repeat(SCHEDULE_LIMITS.label + 1) }, "label", "is too long (maximum is 255 characters)"],
    [{ label: "a\nb" }, "label", "must not contain control characters"],
    [{ cronline: "" }, "cronline", "can't be blank"],
    [{ cronline: "every day" }, "cronline", "must be a shorthand such as @daily or five cron fields"],
    [{ message: "é".repeat(SCHEDULE_LIMITS.messageBytes) }, "message", "is too long (maximum is 65,536 bytes)"],
    [{ commit: "a\u0000" }, "commit", "must not contain NUL characters"],
    [{ branch: "x".repeat(1025) }, "branch", "is too long (maximum is 1,024 characters)"],
    [{ env: { "A=B": "1" } }, "env", ""],
  ])("names the field of %j", (changes, field, code) => {
    const problems = problemsOf(changes);
    expect(problems.map((p) => p.field)).toEqual([expect.stringContaining(field)]);
    expect(problems[0]?.code).toEqual(expect.stringContaining(code));
  });

  it("takes a multi-line message", () => {
    expect(problemsOf({ message: "Nightly\n\nwith a body" })).toEqual([]);
  });
});

describe("nextBuildAfterTick", () => {
  const hourly = parseCronline("@hourly");
  if (typeof hourly === "string") throw new Error(hourly);

  it("is the next tick after the one handled on time", () => {
    const tick = new Date("2026-03-01T10:00:00.000Z");
    expect(nextBuildAfterTick(hourly, tick, new Date("2026-03-01T10:00:04.000Z"))?.toISOString()).toBe(
      "2026-03-01T11:00:00.000Z",
    );
  });

  it("builds ticks missed while nothing ran once: the next is the first after now", () => {
    // Down from before 10:00 until 13:30: the 10:00 tick is handled at 13:30, and 11:00, 12:00 and 13:00 are not.
    const tick = new Date("2026-03-01T10:00:00.000Z");
    expect(nextBuildAfterTick(hourly, tick, new Date("2026-03-01T13:30:00.000Z"))?.toISOString()).toBe(
      "2026-03-01T14:00:00.000Z",
    );
  });

  it("is after the tick even when the clock reads earlier than it", () => {
    const tick = new Date("2026-03-01T10:00:00.000Z");
    expect(nextBuildAfterTick(hourly, tick, new Date("2026-03-01T09:59:59.000Z"))?.toISOString()).toBe(
      "2026-03-01T11:00:00.000Z",
    );
  });
});
