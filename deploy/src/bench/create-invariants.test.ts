import type { BuildView, PipelineCounters } from "../faults/fault-invariants.js";
import { checkCreates, createsHeld, formatCreateCheck, type StaleProbe, staleState } from "./create-invariants.js";

const build = (number: number, state: string, jobStates: string[]): BuildView => ({
  id: `b${number}`,
  number,
  state,
  jobs: jobStates.map((s, i) => ({ id: `j${number}-${i}`, type: "script", state: s })),
});

/** Counters as the listing of `builds` implies them (each with two scheduled script jobs when scheduled). */
const counters = (over: Partial<PipelineCounters> = {}): PipelineCounters => ({
  scheduled_builds_count: 0,
  running_builds_count: 0,
  scheduled_jobs_count: 0,
  running_jobs_count: 0,
  waiting_jobs_count: 0,
  ...over,
});

const probe = (over: Partial<StaleProbe> = {}): StaleProbe => ({
  created: 5,
  reads: 30,
  conditional: 10,
  stale: [],
  errors: [],
  ...over,
});

describe("staleState", () => {
  it("takes the acknowledged state and any later one as fresh", () => {
    expect(staleState("scheduled", "scheduled")).toBe(false);
    expect(staleState("scheduled", "running")).toBe(false);
    expect(staleState("scheduled", "canceled")).toBe(false);
    expect(staleState("running", "failing")).toBe(false);
    expect(staleState("canceling", "canceled")).toBe(false);
    expect(staleState("canceled", "canceled")).toBe(false);
  });

  it("takes an earlier state as stale", () => {
    expect(staleState("canceled", "scheduled")).toBe(true);
    expect(staleState("canceling", "running")).toBe(true);
    expect(staleState("running", "scheduled")).toBe(true);
    expect(staleState("canceled", "canceling")).toBe(true);
  });

  it("takes another finished state than the acknowledged one as stale (a finished build never changes)", () => {
    expect(staleState("canceled", "passed")).toBe(true);
    expect(staleState("passed", "failed")).toBe(true);
  });

  it("takes a state the API does not document as stale", () => {
    expect(staleState("scheduled", "creating")).toBe(true);
    expect(staleState("scheduled", "")).toBe(true);
  });
});

describe("checkCreates", () => {
  const history = [build(1, "passed", ["passed", "passed"]), build(2, "canceled", ["canceled", "canceled"])];

  it("passes when every acknowledged create is found once and the counters match the listing", () => {
    const builds = [...history, build(3, "scheduled", ["scheduled", "scheduled"]), build(4, "canceled", ["canceled"])];
    const check = checkCreates({
      inFlight: 0,
      acknowledged: 2,
      after: 2,
      builds,
      counters: counters({ scheduled_builds_count: 1, scheduled_jobs_count: 2 }),
    });
    expect(check).toMatchObject({ acknowledged: 2, found: 2, duplicateNumbers: [], jobsListedTwice: 0 });
    expect(check.failures).toEqual([]);
  });

  it("reports acknowledged creates without a build, and builds without an acknowledgement", () => {
    const lost = checkCreates({
      inFlight: 0,
      acknowledged: 3,
      after: 2,
      builds: [...history, build(3, "canceled", [])],
      counters: counters(),
    });
    expect(lost.failures).toEqual(["2 acknowledged creates have no build"]);
    const extra = checkCreates({
      inFlight: 0,
      acknowledged: 0,
      after: 2,
      builds: [...history, build(3, "canceled", [])],
      counters: counters(),
    });
    expect(extra.failures).toEqual(["1 builds were created without a 201 answer"]);
    // A create in flight when a run ended may have made its build without its 201 being counted.
    const cutOff = checkCreates({
      inFlight: 1,
      acknowledged: 0,
      after: 2,
      builds: [...history, build(3, "canceled", [])],
      counters: counters(),
    });
    expect(cutOff.failures).toEqual([]);
  });

  it("reports a number given twice, and a job listed twice", () => {
    const twice = { ...build(3, "canceled", ["canceled"]), id: "other" };
    const check = checkCreates({
      inFlight: 0,
      acknowledged: 3,
      after: 2,
      builds: [...history, build(3, "canceled", ["canceled"]), twice, build(4, "canceled", [])],
      counters: counters(),
    });
    expect(check.duplicateNumbers).toEqual([3]);
    expect(check.jobsListedTwice).toBe(1);
    expect(check.failures).toEqual(["numbers given twice: #3", "1 job ids listed twice"]);
  });

  it("reports counters that differ from the listing, and unreadable ones", () => {
    const builds = [...history, build(3, "scheduled", ["scheduled", "scheduled"])];
    const behind = checkCreates({
      inFlight: 0,
      acknowledged: 1,
      after: 2,
      builds,
      counters: counters({ scheduled_builds_count: 1 }),
    });
    expect(behind.counterMismatches).toEqual(["scheduled_jobs_count 0 (listing: 2)"]);
    expect(behind.failures).toEqual(["pipeline counters did not converge: scheduled_jobs_count 0 (listing: 2)"]);
    const unreadable = checkCreates({ inFlight: 0, acknowledged: 1, after: 2, builds, counters: undefined });
    expect(unreadable.counterMismatches).toEqual(["pipeline counters unreadable"]);
  });
});

describe("formatCreateCheck and createsHeld", () => {
  const good = checkCreates({ inFlight: 0, acknowledged: 0, after: 0, builds: [], counters: counters() });

  it("prints ok for creates that held and a probe that saw nothing stale", () => {
    expect(formatCreateCheck(good, probe())).toEqual([
      "creates: 0 acknowledged (201), 0 found, numbers unique, counters exact  ok",
      "stale reads while creating and canceling: 0 of 30 (5 builds created, canceled and read back; 10 conditional reads)  ok",
    ]);
    expect(createsHeld(good, probe())).toBe(true);
  });

  it("prints FAILED with each stale read and error, and does not hold", () => {
    const seen = probe({
      stale: ["GET build after cancel: #3 scheduled, acknowledged canceled"],
      errors: ["cancel #4: 500"],
    });
    const lines = formatCreateCheck(good, seen);
    expect(lines[1]).toMatch(/^stale reads while creating and canceling: 1 of 30 .*FAILED$/);
    expect(lines.slice(2)).toEqual([
      "  stale: GET build after cancel: #3 scheduled, acknowledged canceled",
      "  error: cancel #4: 500",
    ]);
    expect(createsHeld(good, seen)).toBe(false);
  });

  it("does not hold when the probe created nothing (it did not run)", () => {
    expect(createsHeld(good, probe({ created: 0 }))).toBe(false);
    expect(formatCreateCheck(good, probe({ created: 0 }))[1]).toMatch(/FAILED$/);
  });

  it("does not hold when creation broke an invariant", () => {
    const lost = checkCreates({ inFlight: 0, acknowledged: 1, after: 0, builds: [], counters: counters() });
    expect(createsHeld(lost, probe())).toBe(false);
    expect(formatCreateCheck(lost, probe())).toContain("  1 acknowledged creates have no build");
  });
});
