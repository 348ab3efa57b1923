import { applyJobEvent, type JobEvent, softFailCovers } from "./job-events.js";
import { JOB_STATES, type JobModel, type JobState, type JobType } from "./types.js";

function job(state: JobState, overrides: Partial<JobModel> = {}): JobModel {
  return {
    id: "job-1",
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

const EVENTS: JobEvent[] = [
  { type: "assign" },
  { type: "accept" },
  { type: "start" },
  { type: "finish", exitStatus: 0 },
  { type: "cancel" },
  { type: "canceled" },
  { type: "timeout" },
  { type: "timed_out" },
  { type: "expire" },
  { type: "unblock" },
  { type: "skip" },
  { type: "unassign" },
];

/** Every allowed transition: `${jobType} ${event} ${from}` → to. Everything not listed must be refused. */
const ALLOWED: Record<string, JobState> = {
  "script assign scheduled": "assigned",
  "script accept assigned": "accepted",
  "script start accepted": "running",
  "trigger start scheduled": "running",
  "script finish running": "passed",
  "script finish canceling": "canceled",
  "script finish timing_out": "timed_out",
  "trigger finish running": "passed",
  "trigger finish canceling": "canceled",
  "trigger finish timing_out": "timed_out",
  "script canceled canceling": "canceled",
  "trigger canceled canceling": "canceled",
  "script timeout running": "timing_out",
  "trigger timeout running": "timing_out",
  "script timed_out timing_out": "timed_out",
  "trigger timed_out timing_out": "timed_out",
  "script expire scheduled": "expired",
  "manual unblock blocked": "unblocked",
  "script unassign assigned": "scheduled",
};
for (const type of ["script", "manual", "waiter"] as const) {
  for (const from of ["pending", "waiting", "scheduled", "assigned", "blocked", "limiting", "limited"] as const) {
    ALLOWED[`${type} cancel ${from}`] = "canceled";
  }
  for (const from of ["accepted", "running"] as const) ALLOWED[`${type} cancel ${from}`] = "canceling";
}
// A trigger job has no agent to stop: canceled at once, running too (its child build goes on).
for (const from of ["pending", "waiting", "scheduled", "limiting", "limited", "running"] as const) {
  ALLOWED[`trigger cancel ${from}`] = "canceled";
}
for (const type of ["script", "trigger", "manual", "waiter"] as const) {
  for (const from of ["pending", "waiting", "scheduled", "assigned"] as const)
    ALLOWED[`${type} skip ${from}`] = "skipped";
}

describe("applyJobEvent: the whole transition table", () => {
  const cases: Array<[JobType, JobEvent]> = [];
  for (const type of ["script", "trigger", "manual", "waiter"] as const) {
    for (const event of EVENTS) cases.push([type, event]);
  }

  it.each(cases)("%s job, %j: allowed exactly from the listed states", (type, event) => {
    for (const state of JOB_STATES) {
      const result = applyJobEvent(job(state, { type }), event);
      const expected = ALLOWED[`${type} ${event.type} ${state}`];
      const outcome = result.ok ? result.job.state : "refused";
      expect({ state, outcome }).toEqual({ state, outcome: expected ?? "refused" });
    }
  });
});

describe("applyJobEvent: the main path of a script job", () => {
  it("goes scheduled → assigned → accepted → running → passed", () => {
    let current = job("scheduled");
    for (const [event, state] of [
      [{ type: "assign" }, "assigned"],
      [{ type: "accept" }, "accepted"],
      [{ type: "start" }, "running"],
      [{ type: "finish", exitStatus: 0 }, "passed"],
    ] as Array<[JobEvent, JobState]>) {
      const result = applyJobEvent(current, event);
      if (!result.ok) throw new Error(result.reason);
      expect(result.job.state).toBe(state);
      current = result.job;
    }
    expect(current.exitStatus).toBe(0);
  });

  it("does not modify the job it is given", () => {
    const original = job("scheduled");
    applyJobEvent(original, { type: "assign" });
    expect(original.state).toBe("scheduled");
  });

  it("keeps the job's other fields, including extra ones", () => {
    const planned = { ...job("scheduled"), name: "Test", priority: 3 };
    const result = applyJobEvent(planned, { type: "assign" });
    expect(result).toEqual({ ok: true, job: { ...planned, state: "assigned" } });
  });
});

describe("applyJobEvent: finish", () => {
  it("records a failure with its exit status", () => {
    expect(applyJobEvent(job("running"), { type: "finish", exitStatus: 2 })).toEqual({
      ok: true,
      job: job("failed", { exitStatus: 2, softFailed: false }),
    });
  });

  it("accepts -1, the agent-lost exit status", () => {
    expect(applyJobEvent(job("running"), { type: "finish", exitStatus: -1 })).toMatchObject({
      ok: true,
      job: { state: "failed", exitStatus: -1 },
    });
  });

  it("soft-fails any failure when soft_fail is true", () => {
    expect(applyJobEvent(job("running", { softFail: true }), { type: "finish", exitStatus: 1 })).toMatchObject({
      ok: true,
      job: { state: "failed", softFailed: true, exitStatus: 1 },
    });
  });

  it("soft-fails any failure with *", () => {
    expect(applyJobEvent(job("running", { softFail: ["*"] }), { type: "finish", exitStatus: 99 })).toMatchObject({
      ok: true,
      job: { state: "failed", softFailed: true },
    });
  });

  it("soft-fails only the listed exit statuses", () => {
    const listed = job("running", { softFail: [2, 3] });
    expect(applyJobEvent(listed, { type: "finish", exitStatus: 3 })).toMatchObject({ job: { softFailed: true } });
    expect(applyJobEvent(listed, { type: "finish", exitStatus: 1 })).toMatchObject({ job: { softFailed: false } });
  });

  it("passes exit 0 whatever soft_fail says", () => {
    expect(applyJobEvent(job("running", { softFail: true }), { type: "finish", exitStatus: 0 })).toMatchObject({
      job: { state: "passed", softFailed: false },
    });
  });

  it("treats a finish after a cancel as canceled, whatever the exit status (C6)", () => {
    for (const exitStatus of [0, 1, -1, 143]) {
      expect(applyJobEvent(job("canceling"), { type: "finish", exitStatus })).toEqual({
        ok: true,
        job: job("canceled", { exitStatus }),
      });
    }
  });

  it("treats a finish after a timeout as timed_out", () => {
    expect(applyJobEvent(job("timing_out"), { type: "finish", exitStatus: 0 })).toEqual({
      ok: true,
      job: job("timed_out", { exitStatus: 0 }),
    });
  });

  it("refuses a non-integer exit status", () => {
    expect(applyJobEvent(job("running"), { type: "finish", exitStatus: 1.5 })).toEqual({
      ok: false,
      reason: "the exit status must be an integer, got 1.5",
    });
    expect(applyJobEvent(job("running"), { type: "finish", exitStatus: Number.NaN })).toMatchObject({ ok: false });
  });

  it("finishes a trigger job from its child build's outcome", () => {
    expect(applyJobEvent(job("running", { type: "trigger" }), { type: "finish", exitStatus: 1 })).toMatchObject({
      job: { state: "failed" },
    });
  });
});

describe("applyJobEvent: reasons", () => {
  const refusals: Array<[JobModel, JobEvent, string]> = [
    [
      job("passed"),
      { type: "accept" },
      'a job in state "passed" cannot be accepted (only a job in state "assigned" can)',
    ],
    [
      job("running"),
      { type: "assign" },
      'a job in state "running" cannot be assigned to an agent (only a job in state "scheduled" can)',
    ],
    [
      job("assigned"),
      { type: "start" },
      'a job in state "assigned" cannot be started (only a job in state "accepted" can)',
    ],
    [
      job("passed"),
      { type: "finish", exitStatus: 0 },
      'a job in state "passed" cannot be finished (only a job in state "running", "canceling" or "timing_out" can)',
    ],
    [
      job("failed"),
      { type: "cancel" },
      'a job in state "failed" cannot be canceled (only a job in state "pending", "waiting", "scheduled", "assigned", "blocked", "limiting", "limited", "accepted" or "running" can)',
    ],
    [
      job("running"),
      { type: "canceled" },
      'a job in state "running" cannot be confirmed as canceled (only a job in state "canceling" can)',
    ],
    [
      job("passed", { type: "manual" }),
      { type: "unblock" },
      'a job in state "passed" cannot be unblocked (only a job in state "blocked" can)',
    ],
    [job("scheduled", { type: "manual" }), { type: "assign" }, "a manual job cannot be assigned to an agent"],
    [job("scheduled", { type: "trigger" }), { type: "assign" }, "a trigger job cannot be assigned to an agent"],
    [job("passed", { type: "waiter" }), { type: "finish", exitStatus: 0 }, "a waiter job cannot be finished"],
    [job("blocked"), { type: "unblock" }, "a script job cannot be unblocked"],
    [job("scheduled", { type: "trigger" }), { type: "expire" }, "a trigger job cannot be expired"],
    [
      job("accepted", { type: "trigger" }),
      { type: "start" },
      'a job in state "accepted" cannot be started (only a job in state "scheduled" can)',
    ],
  ];

  it.each(refusals.map(([subject, event, reason]) => ({ subject, event, reason })))(
    "$reason",
    ({ subject, event, reason }) => {
      expect(applyJobEvent(subject, event)).toEqual({ ok: false, reason });
    },
  );
});

describe("softFailCovers", () => {
  it.each<[JobModel["softFail"], number, boolean]>([
    [null, 1, false],
    [true, 1, true],
    [true, 0, false],
    [["*"], 255, true],
    [["*"], 0, false],
    [[1], 1, true],
    [[1], 2, false],
    [[], 1, false],
    [[-1], -1, true],
  ])("%j covers %d → %s", (softFail, status, covered) => {
    expect(softFailCovers(softFail, status)).toBe(covered);
  });
});
