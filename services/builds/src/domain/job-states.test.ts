import { cancelPlan, isFinishedJobState, isFinishedNotOk, isFinishedOk, isHardFailure } from "./job-states.js";
import { JOB_STATES, type JobModel, type JobState } from "./types.js";

function job(id: string, state: JobState, overrides: Partial<JobModel> = {}): JobModel {
  return {
    id,
    type: "script",
    stepPosition: 0,
    stepKey: null,
    state,
    dependsOn: [],
    allowDependencyFailure: false,
    continueOnFailure: false,
    blockedState: null,
    isInput: false,
    softFail: null,
    exitStatus: null,
    softFailed: false,
    brokenReason: null,
    retried: false,
    ...overrides,
  };
}

describe("isFinishedJobState", () => {
  it.each<[JobState, boolean]>([
    ["pending", false],
    ["waiting", false],
    ["waiting_failed", true],
    ["blocked", false],
    ["blocked_failed", true],
    ["unblocked", true],
    ["unblocked_failed", true],
    ["limiting", false],
    ["limited", false],
    ["scheduled", false],
    ["assigned", false],
    ["accepted", false],
    ["running", false],
    ["passed", true],
    ["failed", true],
    ["timing_out", false],
    ["timed_out", true],
    ["canceling", false],
    ["canceled", true],
    ["skipped", true],
    ["broken", true],
    ["expired", true],
  ])("%s → %s", (state, finished) => {
    expect(isFinishedJobState(state)).toBe(finished);
  });

  it("covers every job state in the table above", () => {
    expect(JOB_STATES).toHaveLength(22);
  });
});

describe("isFinishedOk / isFinishedNotOk / isHardFailure", () => {
  it.each<[JobState, boolean, boolean, boolean, boolean]>([
    // state, softFailed, ok, not ok, hard failure
    ["passed", false, true, false, false],
    ["failed", false, false, true, true],
    ["failed", true, true, false, false],
    ["broken", false, true, false, false],
    ["skipped", false, true, false, false],
    ["unblocked", false, true, false, false],
    ["timed_out", false, false, true, true],
    ["canceled", false, false, true, true],
    ["expired", false, false, true, true],
    ["waiting_failed", false, false, true, false],
    ["blocked_failed", false, false, true, false],
    ["unblocked_failed", false, false, true, false],
    ["running", false, false, false, false],
    ["pending", false, false, false, false],
    ["blocked", false, false, false, false],
  ])("%s (soft %s): ok %s, not ok %s, hard %s", (state, softFailed, ok, notOk, hard) => {
    const j = { state, softFailed };
    expect(isFinishedOk(j)).toBe(ok);
    expect(isFinishedNotOk(j)).toBe(notOk);
    expect(isHardFailure(j)).toBe(hard);
  });
});

describe("cancelPlan", () => {
  it("cancels at once what no agent runs, and marks running jobs canceling", () => {
    const jobs = JOB_STATES.map((state) => job(state, state));
    expect(cancelPlan(jobs)).toEqual({
      cancel: ["pending", "waiting", "blocked", "limiting", "limited", "scheduled", "assigned"],
      canceling: ["accepted", "running"],
    });
  });

  it("leaves finished, canceling and timing-out jobs alone", () => {
    const jobs = [job("a", "passed"), job("b", "canceling"), job("c", "timing_out"), job("d", "broken")];
    expect(cancelPlan(jobs)).toEqual({ cancel: [], canceling: [] });
  });

  it("returns empty lists for no jobs", () => {
    expect(cancelPlan([])).toEqual({ cancel: [], canceling: [] });
  });
});
