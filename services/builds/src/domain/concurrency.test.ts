import { advance } from "./advance-jobs.js";
import { ABANDONED_SLOT_MS, admissions, type GroupJob, staleSlots } from "./concurrency.js";
import type { JobModel } from "./types.js";

const T0 = new Date("2026-05-01T10:00:00Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);

function job(id: string, state: GroupJob["state"], createdSecond: number, extra: Partial<GroupJob> = {}): GroupJob {
  return { id, state, createdAt: at(createdSecond), concurrency: 1, method: "ordered", ...extra };
}

describe("admissions", () => {
  it("admits the oldest limited job into a free slot", () => {
    expect(admissions([job("b", "limited", 2), job("a", "limited", 1)], [])).toEqual([{ jobId: "a", slot: 0 }]);
  });

  it("admits nothing while the group is full", () => {
    expect(admissions([job("a", "running", 0), job("b", "limited", 1)], [0])).toEqual([]);
  });

  it("fills every free slot up to the limit, lowest slots first", () => {
    const jobs = ["a", "b", "c", "d"].map((id, i) => job(id, "limited", i, { concurrency: 3 }));
    expect(admissions(jobs, [1])).toEqual([
      { jobId: "a", slot: 0 },
      { jobId: "b", slot: 2 },
    ]);
  });

  it("keeps ordered jobs behind an earlier job still waiting for its dependencies", () => {
    const jobs = [job("early", "waiting", 1), job("late", "limited", 2)];
    expect(admissions(jobs, [])).toEqual([]);
  });

  it("lets eager jobs pass an earlier job that is not ready", () => {
    const jobs = [job("early", "pending", 1), job("late", "limited", 2, { method: "eager" })];
    expect(admissions(jobs, [])).toEqual([{ jobId: "late", slot: 0 }]);
  });

  it("does not let an ordered job pass an earlier one that found no slot under its own smaller limit", () => {
    const jobs = [job("small", "limited", 1, { concurrency: 1 }), job("big", "limited", 2, { concurrency: 3 })];
    expect(admissions(jobs, [0])).toEqual([]);
    const eager = [job("small", "limited", 1), job("big", "limited", 2, { concurrency: 3, method: "eager" })];
    expect(admissions(eager, [0])).toEqual([{ jobId: "big", slot: 1 }]);
  });

  it("ignores finished jobs and orders equal creation times by id", () => {
    const jobs = [job("z", "limited", 1), job("done", "passed", 0), job("y", "limited", 1)];
    expect(admissions(jobs, [])).toEqual([{ jobId: "y", slot: 0 }]);
  });

  it("stays fast with a large limit and many holders", () => {
    const holders = Array.from({ length: 5000 }, (_, i) => i);
    const started = performance.now();
    expect(admissions([job("a", "limited", 1, { concurrency: 10_000 })], holders)).toEqual([
      { jobId: "a", slot: 5000 },
    ]);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("staleSlots", () => {
  const slot = (jobId: string, slotNumber: number, takenSecond: number) => ({
    jobId,
    slot: slotNumber,
    takenAt: at(takenSecond),
  });

  it("frees the slots of finished jobs (absent from the group's unfinished jobs)", () => {
    expect(staleSlots([slot("gone", 0, 0)], [], at(1))).toEqual([slot("gone", 0, 0)]);
  });

  it("keeps the slots of jobs handed to agents or running", () => {
    expect(staleSlots([slot("a", 0, 0)], [job("a", "running", 0)], at(3600))).toEqual([]);
    expect(staleSlots([slot("a", 0, 0)], [job("a", "scheduled", 0)], at(3600))).toEqual([]);
  });

  it("frees a slot whose job stayed limited (a promotion a crash interrupted) only after a while", () => {
    const taken = slot("a", 0, 0);
    expect(staleSlots([taken], [job("a", "limited", 0)], at(1))).toEqual([]);
    expect(staleSlots([taken], [job("a", "limited", 0)], at(ABANDONED_SLOT_MS / 1000 + 1))).toEqual([taken]);
  });
});

describe("advance into a concurrency group", () => {
  const model = (over: Partial<JobModel>): JobModel => ({
    id: "j",
    type: "script",
    stepPosition: 0,
    stepKey: null,
    state: "pending",
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
    ...over,
  });

  it("makes a ready job of a group limited instead of scheduled", () => {
    const [grouped, plain] = advance([
      model({ id: "g", concurrency: 1, concurrencyGroup: "deploy" }),
      model({ id: "p" }),
    ]);
    expect([grouped?.state, plain?.state]).toEqual(["limited", "scheduled"]);
  });

  it("leaves a limited job alone (the gate schedules it)", () => {
    const [limited] = advance([model({ state: "limited", concurrency: 1, concurrencyGroup: "deploy" })]);
    expect(limited?.state).toBe("limited");
  });
});
