import {
  type BuildView,
  checkInvariants,
  expectedCounters,
  formatReport,
  isBadSample,
  overlapping,
  type ProbeSample,
  summarizeOutage,
} from "./fault-invariants.js";

const sample = (over: Partial<ProbeSample>): ProbeSample => ({
  dependency: "mongodb",
  route: "GET build",
  phase: "down",
  at: 0,
  status: 503,
  ms: 10,
  jsonMessage: true,
  ...over,
});

const build = (number: number, state: string, jobStates: string[]): BuildView => ({
  id: `b${number}`,
  number,
  state,
  jobs: jobStates.map((s, i) => ({ id: `j${number}-${i}`, type: "script", state: s })),
});

const zero = {
  scheduled_builds_count: 0,
  running_builds_count: 0,
  scheduled_jobs_count: 0,
  running_jobs_count: 0,
  waiting_jobs_count: 0,
};

describe("probe samples", () => {
  it("accepts 503/504 with a JSON message, successes and client errors with one; rejects 500s, hangs, bare 503s", () => {
    expect(isBadSample(sample({}))).toBe(false);
    expect(isBadSample(sample({ status: 504 }))).toBe(false);
    expect(isBadSample(sample({ status: 200, jsonMessage: false }))).toBe(false);
    expect(isBadSample(sample({ status: 404 }))).toBe(false);
    expect(isBadSample(sample({ status: 500 }))).toBe(true);
    expect(isBadSample(sample({ status: 502 }))).toBe(true);
    expect(isBadSample(sample({ status: 503, jsonMessage: false }))).toBe(true);
    expect(isBadSample(sample({ status: 0, hung: true }))).toBe(true);
    expect(isBadSample(sample({ status: 0 }))).toBe(true);
  });

  it("takes a refused connection only while the gateway itself is down, never a hang or after it is back", () => {
    expect(isBadSample(sample({ dependency: "gateway", status: 0 }))).toBe(false);
    expect(isBadSample(sample({ dependency: "gateway", status: 0, hung: true }))).toBe(true);
    expect(isBadSample(sample({ dependency: "gateway", phase: "back", status: 0 }))).toBe(true);
    expect(isBadSample(sample({ dependency: "builds", status: 0 }))).toBe(true);
    expect(isBadSample(sample({ dependency: "gateway", status: 500 }))).toBe(true);
  });

  it("counts by status and measures recovery from the restart to each route's lasting success", () => {
    const samples = [
      sample({ at: 100, ms: 40 }),
      sample({ at: 5_000, ms: 9_000, status: 0, hung: true }),
      sample({ route: "GET pipelines", at: 200, status: 200, jsonMessage: false }),
      sample({ phase: "back", at: 10_500, status: 503 }),
      sample({ phase: "back", at: 11_000, status: 200, ms: 500 }),
      sample({ phase: "back", at: 12_000, status: 200 }),
      sample({ dependency: "nats", at: 1, status: 500 }),
    ];
    const s = summarizeOutage("mongodb", samples, 10_000);
    expect(s.byStatus).toEqual({ "200": 1, "503": 1, hang: 1 });
    expect(s.afterRestart).toEqual({ "200": 2, "503": 1 });
    expect(s.samples).toBe(6);
    expect(s.bad).toBe(1);
    expect(s.maxMs).toBe(9_000);
    // GET build first succeeded for good at 11 000 + 500 ms; GET pipelines never failed.
    expect(s.recoveryMs).toBe(1_500);
    expect(s.downMs).toBe(10_000);
  });

  it("reports no recovery when a route's last answer is a failure", () => {
    const s = summarizeOutage("s3", [sample({ dependency: "s3", at: 20_000, phase: "back" })], 10_000);
    expect(s.recoveryMs).toBeUndefined();
  });
});

describe("overlapping", () => {
  it("counts the intervals that touch the window", () => {
    const intervals: Array<[number, number]> = [
      [0, 5],
      [5, 20],
      [12, 30],
      [31, 40],
    ];
    expect(overlapping(intervals, 10, 30)).toBe(2);
    expect(overlapping(intervals, 5, 5)).toBe(2);
    expect(overlapping([], 0, 1)).toBe(0);
  });
});

describe("invariants", () => {
  const healthy = {
    acknowledged: [1, 2],
    builds: [build(1, "passed", ["passed", "passed"]), build(2, "failed", ["passed", "failed"])],
    runs: ["j1-0", "j1-1", "j2-0", "j2-1"],
    counters: zero,
    consumers: [{ name: "pipelines-counts", pending: 0, ackPending: 0, redelivered: 3 }],
    outages: [],
  };

  it("hold for finished builds whose jobs each ran once, matching counters and idle consumers", () => {
    const r = checkInvariants(healthy);
    expect(r.failures).toEqual([]);
    expect(checkInvariants({ ...healthy, acknowledged: [2] }).unacknowledged).toEqual([1]);
    expect(r.jobsByState).toEqual({ passed: 3, failed: 1 });
    expect(r.buildsByState).toEqual({ passed: 1, failed: 1 });
    expect(formatReport([], r).join("\n")).not.toContain("FAILED");
  });

  it("name each broken invariant", () => {
    const r = checkInvariants({
      ...healthy,
      acknowledged: [1, 2, 3],
      builds: [build(1, "passed", ["passed", "passed"]), build(2, "running", ["running", "scheduled"])],
      runs: ["j1-0", "j1-0", "j2-0"],
      counters: { ...zero, running_builds_count: 2 },
      consumers: [{ name: "pipelines-counts", pending: 4, ackPending: 1, redelivered: 0 }],
      outages: [
        {
          dependency: "nats",
          downMs: 10_000,
          samples: 3,
          byStatus: { "500": 1 },
          afterRestart: {},
          bad: 1,
          maxMs: 5,
          recoveryMs: undefined,
        },
      ],
    });
    expect(r.missing).toEqual([3]);
    expect(r.unacknowledged).toEqual([]);
    expect(r.jobsNotTerminal).toEqual(["j2-0 running", "j2-1 scheduled"]);
    expect(r.jobsRunTwice).toEqual(["j1-0 ×2"]);
    expect(r.passedWithoutRun).toEqual(["j1-1"]);
    expect(r.counterMismatches).toEqual([
      "running_builds_count 2 (listing: 1)",
      "scheduled_jobs_count 0 (listing: 1)",
      "running_jobs_count 0 (listing: 1)",
    ]);
    expect(r.failures).toHaveLength(9);
    expect(formatReport([], r).join("\n")).toContain("FAILED");
  });

  it("derive the expected counters from the listing as the builds service counts them (waiters and retried jobs aside)", () => {
    expect(
      expectedCounters([
        build(1, "scheduled", ["scheduled", "waiting"]),
        build(2, "failing", ["accepted", "assigned", "failed"]),
        { ...build(3, "running", ["running"]), jobs: [{ id: "w", type: "waiter", state: "waiting" }] },
        {
          ...build(4, "running", []),
          jobs: [
            { id: "b", type: "manual", state: "blocked" },
            { id: "t", type: "trigger", state: "running" },
            { id: "r", type: "script", state: "scheduled", retried: true },
          ],
        },
      ]),
    ).toEqual({
      scheduled_builds_count: 1,
      running_builds_count: 3,
      scheduled_jobs_count: 2,
      running_jobs_count: 2,
      waiting_jobs_count: 2,
    });
  });
});
