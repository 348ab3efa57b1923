import { stampsFor } from "./job-stamps.js";

const at = new Date("2026-11-22T10:00:00.000Z");
const earlier = new Date("2026-11-22T09:00:00.000Z");
const none = { scheduledAt: null, startedAt: null, finishedAt: null };

describe("stampsFor", () => {
  it("stamps scheduled and runnable the first time a job is scheduled only", () => {
    expect(stampsFor(none, "scheduled", at)).toEqual({ scheduledAt: at, runnableAt: at });
    expect(stampsFor({ ...none, scheduledAt: earlier }, "scheduled", at)).toEqual({});
  });

  it("stamps every assignment, since an unaccepted job can be assigned again", () => {
    expect(stampsFor({ ...none, scheduledAt: earlier }, "assigned", at)).toEqual({ assignedAt: at });
  });

  it("stamps the start once, and the finish once on any final state", () => {
    expect(stampsFor(none, "running", at)).toEqual({ startedAt: at });
    expect(stampsFor({ ...none, startedAt: earlier }, "running", at)).toEqual({});
    for (const state of ["passed", "failed", "canceled", "timed_out", "expired", "broken"] as const) {
      expect(stampsFor(none, state, at)).toEqual({ finishedAt: at });
      expect(stampsFor({ ...none, finishedAt: earlier }, state, at)).toEqual({});
    }
  });

  it("stamps an unblock, and nothing for states that are neither", () => {
    expect(stampsFor(none, "unblocked", at)).toEqual({ unblockedAt: at, finishedAt: at });
    expect(stampsFor(none, "accepted", at)).toEqual({});
    expect(stampsFor(none, "canceling", at)).toEqual({});
  });
});
