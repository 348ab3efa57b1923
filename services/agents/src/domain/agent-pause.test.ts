import { isPaused, PAUSE_LIMITS, pauseEndsAt, pauseRequestProblem } from "./agent-pause.js";

const at = new Date("2026-03-01T10:00:00.000Z");
const minutes = (n: number) => new Date(at.getTime() + n * 60_000);

describe("pauseRequestProblem", () => {
  it("takes no timeout (the default applies) and timeouts from 1 minute to 7 days", () => {
    expect(pauseRequestProblem("", undefined)).toBeNull();
    expect(pauseRequestProblem("maintenance", 1)).toBeNull();
    expect(pauseRequestProblem("", PAUSE_LIMITS.maxTimeoutMinutes)).toBeNull();
  });

  it("refuses timeouts out of range or not whole", () => {
    for (const timeout of [0, -5, 10_081, 1.5]) {
      expect(pauseRequestProblem("", timeout)).toBe("Timeout in minutes must be a whole number from 1 to 10080");
    }
  });

  it("bounds the note", () => {
    expect(pauseRequestProblem("n".repeat(1000), 5)).toBeNull();
    expect(pauseRequestProblem("n".repeat(1001), 5)).toBe("Note is too long (maximum is 1000 characters)");
  });
});

describe("pauseEndsAt and isPaused", () => {
  const paused = { paused: true, pausedAt: at, pausedTimeoutInMinutes: 5 };

  it("ends a pause its timeout after it began", () => {
    expect(pauseEndsAt(paused)).toEqual(minutes(5));
    expect(isPaused(paused, minutes(4.99))).toBe(true);
    expect(isPaused(paused, minutes(5))).toBe(false);
    expect(isPaused(paused, minutes(60))).toBe(false);
  });

  it("keeps a pause without a timeout until it is resumed", () => {
    const endless = { paused: true, pausedAt: at, pausedTimeoutInMinutes: null };
    expect(pauseEndsAt(endless)).toBeNull();
    expect(isPaused(endless, minutes(100_000))).toBe(true);
    expect(isPaused({ paused: true, pausedAt: at }, minutes(100_000))).toBe(true);
  });

  it("is never paused when not paused", () => {
    const resumed = { paused: false, pausedAt: null, pausedTimeoutInMinutes: null };
    expect(pauseEndsAt(resumed)).toBeNull();
    expect(isPaused(resumed, at)).toBe(false);
  });
});
