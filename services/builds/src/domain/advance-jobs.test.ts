import { advance } from "./advance-jobs.js";
import type { JobModel, JobState, JobType } from "./types.js";

function job(id: string, type: JobType, state: JobState, overrides: Partial<JobModel> = {}): JobModel {
  return {
    id,
    type,
    stepPosition: 0,
    stepKey: null,
    state,
    dependsOn: [],
    allowDependencyFailure: false,
    continueOnFailure: false,
    blockedState: type === "manual" ? "passed" : null,
    isInput: false,
    softFail: null,
    exitStatus: null,
    softFailed: false,
    brokenReason: null,
    retried: false,
    ...overrides,
  };
}

function states(jobs: readonly JobModel[]): Record<string, JobState> {
  return Object.fromEntries(jobs.map((j) => [j.id, j.state]));
}

describe("advance: jobs without dependencies", () => {
  it.each<[JobType, JobState]>([
    ["script", "scheduled"],
    ["trigger", "scheduled"],
    ["manual", "blocked"],
    ["waiter", "passed"],
  ])("a pending %s job becomes %s", (type, expected) => {
    expect(advance([job("a", type, "pending")])[0]?.state).toBe(expected);
  });

  it("moves a waiting job whose dependencies are gone the same way", () => {
    expect(advance([job("a", "script", "waiting")])[0]?.state).toBe("scheduled");
  });

  it("returns an empty list for no jobs", () => {
    expect(advance([])).toEqual([]);
  });
});

describe("advance: waiting on dependencies", () => {
  it("makes a pending job with an unfinished dependency wait", () => {
    const jobs = [job("a", "script", "running"), job("b", "script", "pending", { dependsOn: ["a"] })];
    expect(states(advance(jobs))).toEqual({ a: "running", b: "waiting" });
  });

  it("leaves a waiting job waiting while a dependency runs", () => {
    const jobs = [job("a", "script", "scheduled"), job("b", "script", "waiting", { dependsOn: ["a"] })];
    expect(states(advance(jobs))).toEqual({ a: "scheduled", b: "waiting" });
  });

  it.each<[JobState, boolean]>([
    ["passed", true],
    ["broken", true],
    ["skipped", true],
    ["unblocked", true],
    ["pending", false],
    ["waiting", false],
    ["blocked", false],
    ["scheduled", false],
    ["assigned", false],
    ["accepted", false],
    ["running", false],
    ["canceling", false],
    ["timing_out", false],
    ["limited", false],
  ])("a dependency in state %s releases the job: %s", (dependencyState, released) => {
    const jobs = [job("a", "script", dependencyState), job("b", "script", "waiting", { dependsOn: ["a"] })];
    expect(advance(jobs)[1]?.state).toBe(released ? "scheduled" : "waiting");
  });

  it("releases the job after a soft failure", () => {
    const jobs = [
      job("a", "script", "failed", { softFailed: true, exitStatus: 1 }),
      job("b", "script", "waiting", { dependsOn: ["a"] }),
    ];
    expect(advance(jobs)[1]?.state).toBe("scheduled");
  });

  it("waits for every dependency", () => {
    const jobs = [
      job("a", "script", "passed"),
      job("b", "script", "running"),
      job("c", "script", "waiting", { dependsOn: ["a", "b"] }),
    ];
    expect(advance(jobs)[2]?.state).toBe("waiting");
  });

  it("ignores dependencies that are not in the list", () => {
    expect(advance([job("a", "script", "pending", { dependsOn: ["gone"] })])[0]?.state).toBe("scheduled");
  });
});

describe("advance: failed dependencies", () => {
  it.each<JobState>([
    "failed",
    "timed_out",
    "canceled",
    "expired",
    "waiting_failed",
    "blocked_failed",
    "unblocked_failed",
  ])("a dependency in state %s fails a waiting script job", (dependencyState) => {
    const jobs = [job("a", "script", dependencyState), job("b", "script", "waiting", { dependsOn: ["a"] })];
    expect(advance(jobs)[1]?.state).toBe("waiting_failed");
  });

  it("fails a manual job as blocked_failed", () => {
    const jobs = [job("a", "script", "failed"), job("b", "manual", "pending", { dependsOn: ["a"] })];
    expect(advance(jobs)[1]?.state).toBe("blocked_failed");
  });

  it("fails a waiter as waiting_failed", () => {
    const jobs = [job("a", "script", "failed"), job("w", "waiter", "pending", { dependsOn: ["a"] })];
    expect(advance(jobs)[1]?.state).toBe("waiting_failed");
  });

  it("fails at once, without waiting for the other dependencies", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("b", "script", "running"),
      job("w", "waiter", "waiting", { dependsOn: ["a", "b"] }),
    ];
    expect(advance(jobs)[2]?.state).toBe("waiting_failed");
  });

  it("propagates the failure down a chain of dependants", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("w1", "waiter", "waiting", { dependsOn: ["a"] }),
      job("b", "script", "waiting", { dependsOn: ["w1"] }),
      job("w2", "waiter", "pending", { dependsOn: ["w1", "b"] }),
      job("c", "manual", "pending", { dependsOn: ["w2"] }),
    ];
    expect(states(advance(jobs))).toEqual({
      a: "failed",
      w1: "waiting_failed",
      b: "waiting_failed",
      w2: "waiting_failed",
      c: "blocked_failed",
    });
  });

  it("lets allowDependencyFailure jobs run after a failure", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("b", "script", "waiting", { dependsOn: ["a"], allowDependencyFailure: true }),
    ];
    expect(advance(jobs)[1]?.state).toBe("scheduled");
  });

  it("still waits for unfinished dependencies when failures are allowed", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("x", "script", "running"),
      job("b", "script", "waiting", { dependsOn: ["a", "x"], allowDependencyFailure: true }),
    ];
    expect(advance(jobs)[2]?.state).toBe("waiting");
  });

  it("allows only the dependencies named in allowFailureOf", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("b", "script", "passed"),
      job("c", "script", "waiting", { dependsOn: ["a", "b"], allowFailureOf: ["a"] }),
      job("d", "script", "waiting", { dependsOn: ["a", "b"], allowFailureOf: ["b"] }),
    ];
    expect(states(advance(jobs))).toMatchObject({ c: "scheduled", d: "waiting_failed" });
  });

  it("passes a waiter with continueOnFailure and releases the jobs behind it", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("w", "waiter", "waiting", { dependsOn: ["a"], continueOnFailure: true }),
      job("b", "script", "waiting", { dependsOn: ["w"] }),
    ];
    expect(states(advance(jobs))).toEqual({ a: "failed", w: "passed", b: "scheduled" });
  });

  it("ignores continueOnFailure on jobs that are not waiters", () => {
    const jobs = [
      job("a", "script", "failed"),
      job("b", "script", "waiting", { dependsOn: ["a"], continueOnFailure: true }),
    ];
    expect(advance(jobs)[1]?.state).toBe("waiting_failed");
  });
});

describe("advance: repeating until nothing changes", () => {
  it("passes consecutive waiters in one call", () => {
    const jobs = [
      job("a", "script", "passed"),
      job("w1", "waiter", "waiting", { dependsOn: ["a"] }),
      job("w2", "waiter", "waiting", { dependsOn: ["w1"] }),
      job("b", "script", "waiting", { dependsOn: ["w2"] }),
    ];
    expect(states(advance(jobs))).toEqual({ a: "passed", w1: "passed", w2: "passed", b: "scheduled" });
  });

  it("handles dependencies listed after their dependants", () => {
    const jobs = [
      job("b", "script", "pending", { dependsOn: ["w"] }),
      job("w", "waiter", "pending", { dependsOn: ["a"] }),
      job("a", "script", "passed"),
    ];
    expect(states(advance(jobs))).toEqual({ b: "scheduled", w: "passed", a: "passed" });
  });

  it("stops at a block step", () => {
    const jobs = [
      job("a", "script", "passed"),
      job("m", "manual", "waiting", { dependsOn: ["a"] }),
      job("b", "script", "waiting", { dependsOn: ["m"] }),
    ];
    expect(states(advance(jobs))).toEqual({ a: "passed", m: "blocked", b: "waiting" });
  });

  it("terminates on a dependency cycle, leaving the jobs waiting", () => {
    const jobs = [
      job("a", "script", "pending", { dependsOn: ["b"] }),
      job("b", "script", "pending", { dependsOn: ["a"] }),
    ];
    expect(states(advance(jobs))).toEqual({ a: "waiting", b: "waiting" });
  });
});

describe("advance: what it does not touch", () => {
  it.each<JobState>([
    "scheduled",
    "assigned",
    "accepted",
    "running",
    "blocked",
    "limiting",
    "limited",
    "passed",
    "broken",
  ])("leaves a %s job alone", (state) => {
    const jobs = [job("a", "script", "failed"), job("b", "script", state, { dependsOn: ["a"] })];
    expect(advance(jobs)[1]?.state).toBe(state);
  });

  it("does not modify its input and shares unchanged jobs", () => {
    const a = job("a", "script", "running");
    const b = job("b", "script", "pending");
    const input = [a, b];
    const output = advance(input);
    expect(input[1]?.state).toBe("pending");
    expect(output[0]).toBe(a);
    expect(output[1]).not.toBe(b);
  });

  it("keeps extra fields of the jobs it changes", () => {
    const planned = { ...job("a", "script", "pending"), name: "Build", priority: 5 };
    expect(advance([planned])[0]).toEqual({ ...planned, state: "scheduled" });
  });
});
