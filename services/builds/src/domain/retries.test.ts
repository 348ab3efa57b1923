import type { AutomaticRetryRule, ScriptStep } from "@conveyor/ci-rules";
import { aJob } from "../test-support.js";
import { advance } from "./advance-jobs.js";
import { deriveBuildState } from "./build-state.js";
import type { Job } from "./job.js";
import { automaticRetriesBefore, automaticRetryRule, manualRetryProblem, retryOf } from "./retries.js";

const at = new Date("2026-03-01T11:00:00.000Z");

function withRetry(retry: ScriptStep["retry"], overrides: Partial<Job> = {}): Job {
  return aJob({
    state: "failed",
    exitStatus: 1,
    step: { type: "script", name: "t", command: "t", agent_query_rules: [], retry },
    ...overrides,
  });
}
const rule = (r: Partial<AutomaticRetryRule>): AutomaticRetryRule => ({ exit_status: "*", limit: 2, ...r });

describe("automaticRetryRule", () => {
  it("applies the first rule matching the exit status, where * is 1 to 255 and -1 only when listed", () => {
    const rules = [rule({ exit_status: [-1], limit: 3 }), rule({ exit_status: "*", limit: 1 })];
    expect(automaticRetryRule(withRetry({ automatic: rules }, { exitStatus: -1 }), [])).toBe(rules[0]);
    expect(automaticRetryRule(withRetry({ automatic: rules }, { exitStatus: 2 }), [])).toBe(rules[1]);
    expect(automaticRetryRule(withRetry({ automatic: [rule({})] }, { exitStatus: -1 }), [])).toBeNull();
    expect(
      automaticRetryRule(withRetry({ automatic: [rule({ exit_status: [3, 4] })] }, { exitStatus: 4 }), []),
    ).not.toBeNull();
    expect(
      automaticRetryRule(withRetry({ automatic: [rule({ exit_status: [3, 4] })] }, { exitStatus: 5 }), []),
    ).toBeNull();
  });

  it("matches signals and signal reasons, with none for no value", () => {
    const job = withRetry(
      { automatic: [rule({ exit_status: [-1], signal_reason: "agent_lost" })] },
      {
        exitStatus: -1,
        signalReason: "agent_lost",
      },
    );
    expect(automaticRetryRule(job, [])).not.toBeNull();
    expect(automaticRetryRule({ ...job, signalReason: "agent_stop" }, [])).toBeNull();
    const none = withRetry({ automatic: [rule({ signal: "none" })] }, { exitStatus: 1 });
    expect(automaticRetryRule(none, [])).not.toBeNull();
    expect(automaticRetryRule({ ...none, signal: "SIGKILL" }, [])).toBeNull();
    const sig = withRetry({ automatic: [rule({ signal: "SIGKILL" })] }, { exitStatus: 1, signal: "sigkill" });
    expect(automaticRetryRule(sig, [])).not.toBeNull();
  });

  it("stops at the rule's limit (at most 10), counting the automatic retries before this attempt", () => {
    const step: ScriptStep["retry"] = { automatic: [rule({ limit: 2 })] };
    const first = withRetry(step, { id: "a1", retried: true, retriedInJobId: "a2" });
    const second = withRetry(step, {
      id: "a2",
      retried: true,
      retriedInJobId: "a3",
      retrySource: { jobId: "a1", retryType: "automatic" },
    });
    const third = withRetry(step, { id: "a3", retrySource: { jobId: "a2", retryType: "automatic" } });
    const jobs = [first, second, third];
    expect(automaticRetriesBefore(third, jobs)).toBe(2);
    // The second attempt, when it failed, could still be retried; the third may not.
    expect(automaticRetryRule({ ...second, retried: false, retriedInJobId: null }, jobs)).not.toBeNull();
    expect(automaticRetryRule(third, jobs)).toBeNull();
    // A manual retry in the chain does not count against the automatic limit.
    const manual = { ...second, retrySource: { jobId: "a1", retryType: "manual" as const } };
    expect(automaticRetriesBefore(third, [first, manual, third])).toBe(1);
    const chain = Array.from({ length: 11 }, (_, i) =>
      withRetry(
        { automatic: [rule({ limit: 50 })] },
        { id: `x${i}`, retrySource: i === 0 ? null : { jobId: `x${i - 1}`, retryType: "automatic" } },
      ),
    );
    const last = chain[10] as Job;
    expect(automaticRetriesBefore(last, chain)).toBe(10);
    expect(automaticRetryRule(last, chain)).toBeNull();
    expect(automaticRetryRule(chain[9] as Job, chain)).not.toBeNull();
  });

  it("never retries passed, soft-failed, canceled or already retried jobs, or jobs without rules", () => {
    const rules = { automatic: [rule({})] };
    expect(automaticRetryRule(withRetry(rules, { state: "passed", exitStatus: 0 }), [])).toBeNull();
    expect(automaticRetryRule(withRetry(rules, { softFailed: true }), [])).toBeNull();
    expect(automaticRetryRule(withRetry(rules, { state: "canceled" }), [])).toBeNull();
    expect(automaticRetryRule(withRetry(rules, { retried: true }), [])).toBeNull();
    expect(automaticRetryRule(withRetry(undefined), [])).toBeNull();
    expect(automaticRetryRule(withRetry(rules, { state: "timed_out" }), [])).not.toBeNull();
  });
});

describe("manualRetryProblem", () => {
  it("allows failed, timed out, canceled and expired jobs", () => {
    for (const state of ["failed", "timed_out", "canceled", "expired"] as const) {
      expect(manualRetryProblem(withRetry(undefined, { state }))).toBeNull();
    }
  });

  it("refuses passed and unfinished jobs unless the step permits passed ones, and retried ones", () => {
    expect(manualRetryProblem(withRetry(undefined, { state: "passed" }))).toBe(
      "Only failed, timed out or canceled jobs can be retried",
    );
    expect(manualRetryProblem(withRetry(undefined, { state: "running" }))).toMatch(/Only failed/);
    expect(
      manualRetryProblem(withRetry({ manual: { allowed: true, permit_on_passed: true } }, { state: "passed" })),
    ).toBeNull();
    expect(manualRetryProblem(withRetry(undefined, { retried: true }))).toMatch(/already been retried/);
  });

  it("refuses when the step forbids manual retries, with its reason", () => {
    expect(manualRetryProblem(withRetry({ manual: { allowed: false, reason: "Deploys are not retried" } }))).toBe(
      "Deploys are not retried",
    );
    expect(manualRetryProblem(withRetry({ manual: { allowed: false } }))).toBe("This job can't be retried");
    expect(manualRetryProblem(aJob({ type: "waiter", state: "passed" }))).toMatch(/command jobs/);
  });
});

describe("retryOf", () => {
  it("makes a pending attempt of the same step with nothing of the old run, and marks the old one", () => {
    const old = withRetry(undefined, {
      id: "old",
      dependsOn: ["dep"],
      retriesCount: 1,
      agent: {
        id: "a",
        name: "a",
        hostname: "",
        ipAddress: "",
        userAgent: "",
        connectionState: "",
        createdAt: null,
        metaData: [],
      },
      signal: "SIGTERM",
      startedAt: at,
      finishedAt: at,
    });
    const by = { id: "u", name: "U", email: "u@x", avatarUrl: null, createdAt: null };
    const { attempt, retried } = retryOf(old, { id: "new", type: "manual", at, retriedBy: by });
    expect(retried).toEqual({ retried: true, retriedInJobId: "new", retryType: "manual", retriedBy: by });
    expect(attempt).toMatchObject({
      id: "new",
      state: "pending",
      dependsOn: ["dep"],
      stepId: old.stepId,
      exitStatus: null,
      agent: null,
      signal: null,
      retried: false,
      retriesCount: 2,
      retryType: "manual",
      retrySource: { jobId: "old", retryType: "manual" },
      createdAt: at,
      startedAt: null,
      finishedAt: null,
    });
  });
});

describe("retry_type", () => {
  it("an automatic retry's attempt and the job it replaced both say automatic", () => {
    const at = new Date("2026-01-01T00:00:00Z");
    const { attempt, retried } = retryOf(aJob({ id: "old", state: "failed" }), {
      id: "new",
      type: "automatic",
      at,
      retriedBy: null,
    });
    expect([attempt.retryType, retried.retryType]).toEqual(["automatic", "automatic"]);
  });
});

describe("retried jobs in the build", () => {
  it("make dependants wait for the newest attempt, and no longer count for the build's state", () => {
    const failed = aJob({ id: "a", state: "failed", exitStatus: 1, retried: true, retriedInJobId: "a2" });
    const attempt = aJob({ id: "a2", state: "running", retrySource: { jobId: "a", retryType: "automatic" } });
    const behind = aJob({ id: "b", state: "pending", dependsOn: ["a"] });
    const [, , waiting] = advance([failed, attempt, behind]);
    expect(waiting?.state).toBe("waiting");
    // The failed attempt no longer makes the build failing: the running one decides.
    expect(deriveBuildState([failed, attempt, waiting as Job], { cancelRequested: false }).state).toBe("running");
    const passed = { ...attempt, state: "passed" as const, exitStatus: 0 };
    const [, , released] = advance([failed, passed, behind]);
    expect(released?.state).toBe("scheduled");
    const done = { ...(released as Job), state: "passed" as const };
    expect(deriveBuildState([failed, passed, done], { cancelRequested: false })).toMatchObject({
      state: "passed",
      finished: true,
    });
  });
});
