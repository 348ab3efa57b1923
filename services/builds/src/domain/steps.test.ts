import {
  jobsOfStep,
  KEPT_STEP_UPDATE_IDS,
  MAX_STEP_LABEL,
  rememberUpdate,
  stepOutcome,
  stepState,
  updatedLabel,
} from "./steps.js";
import type { JobState } from "./types.js";

const job = (
  state: JobState,
  extra: { softFailed?: boolean; retried?: boolean; stepId?: string; stepKey?: string | null } = {},
) => ({
  state,
  softFailed: extra.softFailed ?? false,
  retried: extra.retried ?? false,
  stepId: extra.stepId ?? "s-1",
  stepKey: extra.stepKey ?? null,
});

describe("jobsOfStep", () => {
  const jobs = [
    job("passed", { stepId: "a", stepKey: "lint" }),
    job("running", { stepId: "b", stepKey: "a" }),
    job("scheduled", { stepId: "b", stepKey: "a" }),
  ];
  it("finds a step's jobs by id first", () => {
    expect(jobsOfStep(jobs, "a")).toEqual([jobs[0]]);
    expect(jobsOfStep(jobs, "b")).toEqual([jobs[1], jobs[2]]);
  });
  it("then by key", () => {
    expect(jobsOfStep(jobs, "lint")).toEqual([jobs[0]]);
  });
  it("finds nothing for an unknown or empty reference, and never matches a missing key", () => {
    expect(jobsOfStep(jobs, "nope")).toEqual([]);
    expect(jobsOfStep(jobs, "")).toEqual([]);
    expect(jobsOfStep([job("passed", { stepKey: null })], "null")).toEqual([]);
  });
});

describe("stepState", () => {
  it.each<[JobState[], string]>([
    [["broken"], "ignored"],
    [["skipped", "broken"], "ignored"],
    [["passed", "failed"], "finished"],
    [["canceled"], "finished"],
    [["running", "scheduled"], "running"],
    [["accepted"], "running"],
    [["canceling"], "running"],
    [["running", "failed"], "failing"],
    [["scheduled", "failed"], "failing"],
    [["scheduled", "waiting"], "ready"],
    [["assigned"], "ready"],
    [["waiting"], "waiting_for_dependencies"],
    [["pending", "blocked"], "waiting_for_dependencies"],
    [["limited"], "waiting_for_dependencies"],
  ])("%j is %s", (states, expected) => {
    expect(stepState(states.map((s) => job(s)))).toBe(expected);
  });
  it("leaves retried attempts out", () => {
    expect(stepState([job("failed", { retried: true }), job("running")])).toBe("running");
    expect(stepState([job("failed", { retried: true }), job("passed")])).toBe("finished");
  });
  it("is ignored with no jobs", () => {
    expect(stepState([])).toBe("ignored");
  });
});

describe("stepOutcome", () => {
  it("is neutral until the step finished, or when nothing ran", () => {
    expect(stepOutcome([job("running")])).toBe("neutral");
    expect(stepOutcome([job("scheduled")])).toBe("neutral");
    expect(stepOutcome([job("broken")])).toBe("neutral");
  });
  it("is hard_failed as soon as a job failed hard", () => {
    expect(stepOutcome([job("failed"), job("running")])).toBe("hard_failed");
    expect(stepOutcome([job("timed_out")])).toBe("hard_failed");
    expect(stepOutcome([job("canceled")])).toBe("hard_failed");
  });
  it("is soft_failed when a job soft-failed, else passed", () => {
    expect(stepOutcome([job("failed", { softFailed: true }), job("passed")])).toBe("soft_failed");
    expect(stepOutcome([job("passed"), job("passed")])).toBe("passed");
  });
  it("counts the latest attempts only", () => {
    expect(stepOutcome([job("failed", { retried: true }), job("passed")])).toBe("passed");
  });
});

describe("updatedLabel", () => {
  it("replaces or appends", () => {
    expect(updatedLabel("Tests", "Lint", false)).toBe("Lint");
    expect(updatedLabel("Tests", " (2)", true)).toBe("Tests (2)");
    expect(updatedLabel("Tests", "", false)).toBe("");
  });
  it("refuses a label over the bound, counting characters", () => {
    expect(updatedLabel("", "x".repeat(MAX_STEP_LABEL), false)).toHaveLength(MAX_STEP_LABEL);
    expect(updatedLabel("", "é".repeat(MAX_STEP_LABEL), false)).toBeDefined();
    expect(updatedLabel("x", "x".repeat(MAX_STEP_LABEL), true)).toBeUndefined();
  });
});

describe("rememberUpdate", () => {
  it("keeps the latest uuids, each once", () => {
    expect(rememberUpdate(["a", "b"], "a")).toEqual(["b", "a"]);
    expect(rememberUpdate(["a"], "")).toEqual(["a"]);
    const many = Array.from({ length: KEPT_STEP_UPDATE_IDS }, (_, i) => `u${i}`);
    const kept = rememberUpdate(many, "new");
    expect(kept).toHaveLength(KEPT_STEP_UPDATE_IDS);
    expect(kept[0]).toBe("u1");
    expect(kept.at(-1)).toBe("new");
  });
});
