import { deriveBuildState } from "./build-state.js";
import { finishedExitStatus, promiseOutcome, promisesHardFailure } from "./promised-failure.js";
import type { JobModel } from "./types.js";

const job = (overrides: Partial<JobModel> = {}): JobModel => ({
  id: "j-1",
  type: "script",
  stepPosition: 0,
  stepKey: null,
  state: "running",
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
});

describe("promisesHardFailure", () => {
  it("holds for an unfinished job's promise its soft_fail does not cover", () => {
    expect(promisesHardFailure(job({ promisedExitStatus: 2 }))).toBe(true);
    expect(promisesHardFailure(job())).toBe(false);
    expect(promisesHardFailure(job({ promisedExitStatus: null }))).toBe(false);
    expect(promisesHardFailure(job({ promisedExitStatus: 2, softFail: [2] }))).toBe(false);
    expect(promisesHardFailure(job({ promisedExitStatus: 2, softFail: true }))).toBe(false);
    expect(promisesHardFailure(job({ promisedExitStatus: 2, state: "failed" }))).toBe(false);
  });
  it("makes the build failing while the job still runs", () => {
    const other = job({ id: "j-2", state: "scheduled" });
    expect(deriveBuildState([job({ promisedExitStatus: 1 }), other], { cancelRequested: false }).state).toBe("failing");
    expect(deriveBuildState([job(), other], { cancelRequested: false }).state).toBe("running");
  });
});

describe("finishedExitStatus", () => {
  it("records the promise instead of a success", () => {
    expect(finishedExitStatus(job({ promisedExitStatus: 3 }), 0)).toBe(3);
  });
  it("keeps a hard promise over a soft failure, and any other failure as reported", () => {
    expect(finishedExitStatus(job({ promisedExitStatus: 3, softFail: [1] }), 1)).toBe(3);
    expect(finishedExitStatus(job({ promisedExitStatus: 3 }), 7)).toBe(7);
    expect(finishedExitStatus(job({ promisedExitStatus: 1, softFail: [1] }), 1)).toBe(1);
  });
  it("changes nothing without a promise", () => {
    expect(finishedExitStatus(job(), 0)).toBe(0);
    expect(finishedExitStatus(job({ softFail: true }), 4)).toBe(4);
  });
});

describe("promiseOutcome", () => {
  it("stores a first promise, repeats the same, refuses another", () => {
    expect(promiseOutcome(job(), 1)).toBe("new");
    expect(promiseOutcome(job({ promisedExitStatus: 1 }), 1)).toBe("same");
    expect(promiseOutcome(job({ promisedExitStatus: 1 }), 2)).toBe("conflict");
  });
});
