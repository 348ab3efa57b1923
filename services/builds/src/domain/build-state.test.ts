import { deriveBuildState } from "./build-state.js";
import type { DerivedBuildState, JobModel, JobState, JobType } from "./types.js";

let nextId = 0;

function job(state: JobState, overrides: Partial<JobModel> = {}): JobModel {
  const type: JobType = overrides.type ?? "script";
  nextId++;
  return {
    id: `job-${nextId}`,
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

const block = (state: JobState, blockedState: "passed" | "failed" | "running" = "passed") =>
  job(state, { type: "manual", blockedState });
const input = (state: JobState) => job(state, { type: "manual", isInput: true });
const waiter = (state: JobState) => job(state, { type: "waiter" });

function derive(jobs: JobModel[], cancelRequested = false): DerivedBuildState {
  return deriveBuildState(jobs, { cancelRequested });
}

const state = (name: DerivedBuildState["state"], finished = false): DerivedBuildState => ({
  state: name,
  blocked: false,
  finished,
});

describe("deriveBuildState: the B1 transitions", () => {
  it("scheduled: the build exists and no agent has taken a job", () => {
    expect(derive([job("scheduled"), waiter("waiting"), job("waiting")])).toEqual(state("scheduled"));
  });

  it("scheduled → running: the first job is started", () => {
    expect(derive([job("running"), waiter("waiting"), job("waiting")])).toEqual(state("running"));
  });

  it("scheduled → not_run: every step was omitted", () => {
    expect(
      derive([
        job("broken", { brokenReason: "branch_mismatch" }),
        job("broken", { brokenReason: "conditional_failed" }),
        job("skipped"),
      ]),
    ).toEqual(state("not_run", true));
  });

  it("scheduled → blocked: the first runnable step is a block step", () => {
    expect(derive([block("blocked"), job("waiting")])).toEqual({ state: "passed", blocked: true, finished: false });
  });

  it("scheduled → canceled: canceled before anything started", () => {
    expect(derive([job("canceled"), waiter("canceled"), job("canceled")], true)).toEqual(state("canceled", true));
  });

  it("running → passed: all jobs finished OK", () => {
    expect(derive([job("passed"), waiter("passed"), job("passed")])).toEqual(state("passed", true));
  });

  it("running → passed: soft failures count as OK", () => {
    expect(derive([job("failed", { softFailed: true, exitStatus: 1 }), job("passed")])).toEqual(state("passed", true));
  });

  it("running → failing: a job failed hard while others still run", () => {
    expect(derive([job("failed", { exitStatus: 1 }), job("running")])).toEqual(state("failing"));
  });

  it("failing → failed: the remaining jobs have finished", () => {
    expect(
      derive([job("failed", { exitStatus: 1 }), job("passed"), waiter("waiting_failed"), job("waiting_failed")]),
    ).toEqual(state("failed", true));
  });

  it("running → canceling: cancel requested while jobs run", () => {
    expect(derive([job("canceling"), job("canceled")], true)).toEqual(state("canceling"));
  });

  it("canceling → canceled: all running jobs stopped", () => {
    expect(derive([job("canceled"), job("passed"), job("canceled")], true)).toEqual(state("canceled", true));
  });

  it("running → blocked and back: a block step is reached, then unblocked", () => {
    const reached = [job("passed"), waiter("passed"), block("blocked"), job("waiting")];
    expect(derive(reached)).toEqual({ state: "passed", blocked: true, finished: false });
    const unblocked = [job("passed"), waiter("passed"), block("unblocked"), job("scheduled")];
    expect(derive(unblocked)).toEqual(state("running"));
  });

  it("blocked → canceled: canceled while blocked", () => {
    expect(derive([job("passed"), block("canceled"), job("canceled")], true)).toEqual(state("canceled", true));
  });
});

describe("deriveBuildState: not_run", () => {
  it("is not_run with no jobs", () => {
    expect(derive([])).toEqual(state("not_run", true));
  });

  it("is not_run with only skipped jobs", () => {
    expect(derive([job("skipped"), waiter("skipped")])).toEqual(state("not_run", true));
  });

  it("is passed when some job ran and the rest were omitted", () => {
    expect(derive([job("broken"), job("passed")])).toEqual(state("passed", true));
  });

  it("is passed when only a waiter passed among omitted jobs", () => {
    expect(derive([job("broken"), waiter("passed"), job("broken")])).toEqual(state("passed", true));
  });
});

describe("deriveBuildState: blocked", () => {
  it.each<["passed" | "failed" | "running"]>([["passed"], ["failed"], ["running"]])(
    "shows the block step's blocked_state %s",
    (blockedState) => {
      expect(derive([job("passed"), block("blocked", blockedState), job("waiting")])).toEqual({
        state: blockedState,
        blocked: true,
        finished: false,
      });
    },
  );

  it("defaults to passed when the blocked state is missing", () => {
    expect(derive([job("blocked", { type: "manual", blockedState: null })])).toEqual({
      state: "passed",
      blocked: true,
      finished: false,
    });
  });

  it("is not blocked while other jobs still run beside the block step", () => {
    expect(derive([job("running"), block("blocked"), job("waiting")])).toEqual(state("running"));
  });

  it("is not blocked while another job is scheduled beside the block step", () => {
    expect(derive([job("passed"), block("blocked"), job("scheduled")])).toEqual(state("running"));
  });

  it("is scheduled, not blocked, when a job beside an initial block step waits for an agent", () => {
    expect(derive([block("blocked"), job("scheduled")])).toEqual(state("scheduled"));
  });

  it("shows failing rather than passed when a failure was allowed through to the block step", () => {
    expect(derive([job("failed", { exitStatus: 1 }), block("blocked", "passed")])).toEqual({
      state: "failing",
      blocked: true,
      finished: false,
    });
    expect(derive([job("failed", { exitStatus: 1 }), block("blocked", "running")])).toMatchObject({ state: "failing" });
  });

  it("keeps failed when the blocked state is failed and a job failed", () => {
    expect(derive([job("failed", { exitStatus: 1 }), block("blocked", "failed")])).toEqual({
      state: "failed",
      blocked: true,
      finished: false,
    });
  });

  it("uses the first blocked block step when several wait", () => {
    expect(derive([block("blocked", "running"), block("blocked", "failed")])).toMatchObject({
      state: "running",
      blocked: true,
    });
  });

  it("is finished failed, not blocked, when the block step could not be reached", () => {
    expect(derive([job("failed", { exitStatus: 1 }), block("blocked_failed"), job("waiting_failed")])).toEqual(
      state("failed", true),
    );
  });
});

describe("deriveBuildState: input steps do not block", () => {
  it("is scheduled while the first step is an unanswered input step", () => {
    expect(derive([input("blocked")])).toEqual(state("scheduled"));
  });

  it("is running while jobs ran and an input step waits", () => {
    expect(derive([job("passed"), input("blocked"), job("waiting")])).toEqual(state("running"));
  });

  it("is failing when a job failed and an input step still waits", () => {
    expect(derive([job("failed", { exitStatus: 2 }), input("blocked")])).toEqual(state("failing"));
  });

  it("passes once the input step is answered and the rest passed", () => {
    expect(derive([job("passed"), input("unblocked"), job("passed")])).toEqual(state("passed", true));
  });
});

describe("deriveBuildState: failures", () => {
  it.each<[JobState]>([["timed_out"], ["expired"], ["canceled"]])("a %s job fails the build", (jobState) => {
    expect(derive([job(jobState), job("passed")])).toEqual(state("failed", true));
  });

  it("is failing while an expired job's siblings still run", () => {
    expect(derive([job("expired"), job("scheduled")])).toEqual(state("failing"));
  });

  it("does not count waiting_failed as a failure of its own", () => {
    expect(derive([job("passed"), job("waiting_failed")])).toEqual(state("passed", true));
  });

  it("is failing while the failure's dependants are still being run (allow_dependency_failure)", () => {
    expect(derive([job("failed", { exitStatus: 1 }), waiter("waiting_failed"), job("running")])).toEqual(
      state("failing"),
    );
  });

  it("is failing while a job times out", () => {
    expect(derive([job("timed_out"), job("timing_out")])).toEqual(state("failing"));
  });
});

describe("deriveBuildState: running", () => {
  it.each<[JobState]>([["assigned"], ["accepted"], ["running"], ["timing_out"]])(
    "is running with a job %s",
    (jobState) => {
      expect(derive([job(jobState), job("waiting")])).toEqual(state("running"));
    },
  );

  it("is running between jobs, once one has passed", () => {
    expect(derive([job("passed"), waiter("passed"), job("scheduled")])).toEqual(state("running"));
  });

  it("does not count a waiter passing as the build starting", () => {
    expect(derive([job("broken"), waiter("passed"), job("scheduled")])).toEqual(state("scheduled"));
  });

  it("is scheduled while every job waits for something", () => {
    expect(derive([job("scheduled"), job("limited"), job("pending")])).toEqual(state("scheduled"));
  });
});

describe("deriveBuildState: canceling", () => {
  it("is canceling while a job cancel is pending on its agent", () => {
    expect(derive([job("canceling"), job("running")])).toEqual(state("canceling"));
  });

  it("stays failing while a job of a failing build stops (cancel_on_build_failing)", () => {
    expect(derive([job("failed"), job("canceling")])).toEqual(state("failing"));
  });

  it.each<[JobState]>([["accepted"], ["running"], ["canceling"], ["timing_out"]])(
    "is canceling after a cancel request while a job is %s",
    (jobState) => {
      expect(derive([job(jobState), job("canceled")], true)).toEqual(state("canceling"));
    },
  );

  it.each<[JobState]>([["pending"], ["waiting"], ["scheduled"], ["assigned"], ["blocked"], ["limiting"], ["limited"]])(
    "is canceling after a cancel request while a %s job is left for the cancel's next batch",
    (jobState) => {
      expect(derive([job("canceled"), job(jobState), job("passed")], true)).toEqual(state("canceling"));
    },
  );

  it("is canceled after a cancel request once nothing runs on an agent", () => {
    expect(derive([job("passed"), job("failed", { exitStatus: 1 }), job("canceled")], true)).toEqual(
      state("canceled", true),
    );
  });

  it("is not_run rather than canceled when every step was omitted", () => {
    expect(derive([job("broken")], true)).toEqual(state("not_run", true));
  });
});
