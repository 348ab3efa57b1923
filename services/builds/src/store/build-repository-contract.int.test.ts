import { MongoClient } from "mongodb";
import type { AgentSnapshot } from "../domain/job.js";
import { aBuild, aJob } from "../test-support.js";
import {
  type BuildRepository,
  createMongoBuildRepository,
  DuplicateBuildNumberError,
  DuplicateClaimError,
} from "./build-repository.js";
import { createMemoryBuildRepository } from "./memory-build-repository.js";

// The BuildRepository contract (build-repository-contract.ts), one set of cases run against the MongoDB
// implementation over the real MongoDB-wire server and against the in-memory one the builds service runs on in other
// services' unit tests (testing.ts): the fake must answer as the database does, or those tests would test a copy.
let mongo: MongoClient;
const dbName = `it_build_contract_${Date.now()}`;
let databases = 0;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  for (let i = 1; i <= databases; i++) await mongo.db(`${dbName}_${i}`).dropDatabase();
  await mongo.close();
});

const implementations: Array<[string, () => Promise<BuildRepository>]> = [
  ["on MongoDB", () => createMongoBuildRepository(mongo.db(`${dbName}_${++databases}`))],
  ["in memory", async () => createMemoryBuildRepository()],
];

const T0 = Date.parse("2026-03-01T10:00:00.000Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000);
const agent = (id: string): AgentSnapshot => ({
  id,
  name: `agent-${id}`,
  hostname: "box",
  ipAddress: "10.0.0.1",
  userAgent: "buildkite-agent/3",
  connectionState: "connected",
  createdAt: at(0),
  metaData: ["queue=default"],
});
const ids = (list: ReadonlyArray<{ id: string }>) => list.map((x) => x.id);

describe.each(implementations)("the BuildRepository %s", (_name, make) => {
  let repo: BuildRepository;
  beforeEach(async () => {
    repo = await make();
  });

  it("numbers builds per pipeline: one or several at once, never twice, raised and forgotten", async () => {
    expect(await repo.nextNumber("p-1")).toBe(1);
    expect(await repo.nextNumber("p-1", 3)).toBe(4);
    expect(await repo.nextNumber("p-2")).toBe(1);
    await repo.raiseNumber("p-1", 10);
    expect(await repo.nextNumber("p-1")).toBe(11);
    await repo.raiseNumber("p-1", 5);
    expect(await repo.nextNumber("p-1")).toBe(12);
    await repo.raiseNumber("p-3", 7);
    expect(await repo.nextNumber("p-3")).toBe(8);
    await repo.forgetNumbering("p-1");
    expect(await repo.nextNumber("p-1")).toBe(1);
    const together = await Promise.all(Array.from({ length: 10 }, () => repo.nextNumber("p-4")));
    expect([...together].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("stores builds and jobs as given, refuses a (pipeline, number) or job id taken, and finds nothing unknown", async () => {
    const build = aBuild({ id: "b-1", metaData: { "deploy.env": "prod" }, env: { "A.B": "1" } });
    await repo.insertBuild(build);
    expect(await repo.findBuildById("b-1")).toEqual(build);
    expect(await repo.findBuild("p-1", 1)).toEqual(build);
    await expect(repo.insertBuild(aBuild({ id: "b-2" }))).rejects.toBeInstanceOf(DuplicateBuildNumberError);
    await repo.insertBuild(aBuild({ id: "b-3", pipelineId: "p-2" }));
    expect((await repo.findBuild("p-2", 1))?.id).toBe("b-3");

    const job = aJob({ id: "j-1", agent: agent("a-1"), env: { "A.B": "1" }, softFail: [1, "*"] });
    await repo.insertJobs([job]);
    expect(await repo.findJob("j-1")).toEqual(job);
    // Like an unordered insert: the new job is stored, and the call fails on the one taken.
    await expect(repo.insertJobs([aJob({ id: "j-1" }), aJob({ id: "j-2" })])).rejects.toThrow();
    expect((await repo.findJob("j-1"))?.agent?.id).toBe("a-1");
    expect((await repo.findJob("j-2"))?.id).toBe("j-2");
    await repo.insertMissingJobs([aJob({ id: "j-2", name: "again" }), aJob({ id: "j-3" })]);
    expect((await repo.findJob("j-2"))?.name).toBe("test");
    expect((await repo.findJob("j-3"))?.id).toBe("j-3");

    expect(await repo.findBuildById("b-9")).toBeNull();
    expect(await repo.findBuild("p-1", 9)).toBeNull();
    expect(await repo.findBuildWithJobs("p-1", 9)).toBeNull();
    expect(await repo.findJob("j-9")).toBeNull();
  });

  it("keeps one claim per build id, oldest first, until it is removed", async () => {
    const claim = (buildId: string, seconds: number) => ({
      buildId,
      pipelineId: "p-1",
      jobIds: ["j-1"],
      createdAt: at(seconds),
    });
    await repo.insertClaim(claim("b-2", 2));
    await repo.insertClaim(claim("b-1", 1));
    await repo.insertClaim(claim("b-3", 3));
    await expect(repo.insertClaim(claim("b-1", 5))).rejects.toBeInstanceOf(DuplicateClaimError);
    expect(await repo.findClaim("b-1")).toEqual(claim("b-1", 1));
    expect((await repo.claimsBefore(at(3), 10)).map((c) => c.buildId)).toEqual(["b-1", "b-2"]);
    expect((await repo.claimsBefore(at(9), 1)).map((c) => c.buildId)).toEqual(["b-1"]);
    await repo.removeClaim("b-1");
    expect(await repo.findClaim("b-1")).toBeNull();
    expect((await repo.claimsBefore(at(9), 10)).map((c) => c.buildId)).toEqual(["b-2", "b-3"]);
  });

  it("reads a build's jobs in order, and removes, repositions and adds dependencies to them as asked", async () => {
    await repo.insertBuild(aBuild());
    await repo.insertBuild(aBuild({ id: "b-2", number: 2 }));
    const parallel = { parallelGroupTotal: 2 };
    await repo.insertJobs([
      aJob({ id: "j-c", stepPosition: 2, state: "pending" }),
      aJob({ id: "j-b1", stepPosition: 1, parallelGroupIndex: 1, ...parallel }),
      aJob({ id: "j-b0", stepPosition: 1, parallelGroupIndex: 0, ...parallel }),
      aJob({ id: "j-a", stepPosition: 0 }),
      aJob({ id: "j-other", buildId: "b-2", buildNumber: 2, stepPosition: 0 }),
    ]);
    expect(ids(await repo.jobsOf(["b-1"]))).toEqual(["j-a", "j-b0", "j-b1", "j-c"]);
    expect(ids(await repo.jobsOf(["b-2", "b-1"]))).toEqual(["j-a", "j-b0", "j-b1", "j-c", "j-other"]);
    expect(await repo.jobsOf([])).toEqual([]);
    const found = await repo.findBuildWithJobs("p-1", 1);
    expect([found?.build.id, ids(found?.jobs ?? [])]).toEqual(["b-1", ["j-a", "j-b0", "j-b1", "j-c"]]);

    await repo.setStepPositions([{ id: "j-c", stepPosition: 0.5 }]);
    expect(ids(await repo.jobsOf(["b-1"]))).toEqual(["j-a", "j-c", "j-b0", "j-b1"]);
    expect(await repo.addDependencies("j-c", ["j-a", "j-x"])).toBe(true);
    expect(await repo.addDependencies("j-c", ["j-x", "j-y"])).toBe(true);
    expect((await repo.findJob("j-c"))?.dependsOn).toEqual(["j-a", "j-x", "j-y"]);
    expect(await repo.addDependencies("j-a", ["j-c"])).toBe(false);
    expect((await repo.findJob("j-a"))?.dependsOn).toEqual([]);

    expect(await repo.deleteJob("j-a", "running")).toBe(false);
    expect(await repo.deleteJob("j-a", "scheduled")).toBe(true);
    expect(await repo.deleteJob("j-a", "scheduled")).toBe(false);
    await repo.deleteJobs("b-1", ["j-b0", "j-other"]);
    expect(ids(await repo.jobsOf(["b-1", "b-2"]))).toEqual(["j-c", "j-b1", "j-other"]);
  });

  it("updates a build only at the version it was read at", async () => {
    await repo.insertBuild(aBuild({ version: 2 }));
    expect(await repo.updateBuild("b-1", 1, { state: "running" })).toBeNull();
    const updated = await repo.updateBuild("b-1", 2, { state: "running", startedAt: at(5), metaData: { k: "v" } });
    expect(updated).toMatchObject({ state: "running", startedAt: at(5), metaData: { k: "v" }, version: 3 });
    expect(await repo.findBuildById("b-1")).toEqual(updated);
    expect(await repo.updateBuild("b-1", 2, { state: "failed" })).toBeNull();
    expect(await repo.updateBuild("b-9", 2, { state: "failed" })).toBeNull();
  });

  it("updates a job only in the state it was read in, held by the agent and not retried when guarded so", async () => {
    await repo.insertJobs([aJob({ id: "j-1", state: "assigned", agent: agent("a-1") }), aJob({ id: "j-2" })]);
    expect(await repo.updateJob("j-1", "scheduled", { state: "accepted" })).toBeNull();
    expect(await repo.updateJob("j-1", "assigned", { state: "accepted" }, { agentId: "a-2" })).toBeNull();
    const accepted = await repo.updateJob("j-1", "assigned", { state: "accepted" }, { agentId: "a-1" });
    expect(accepted).toMatchObject({ id: "j-1", state: "accepted", agent: agent("a-1") });
    expect(await repo.findJob("j-1")).toEqual(accepted);
    const back = await repo.updateJob("j-1", "accepted", { state: "scheduled", agent: null, assignedAt: null });
    expect(back).toMatchObject({ state: "scheduled", agent: null, assignedAt: null });

    expect(await repo.updateJob("j-2", "scheduled", { retried: true }, { notRetried: true })).toMatchObject({
      retried: true,
    });
    expect(await repo.updateJob("j-2", "scheduled", { state: "canceled" }, { notRetried: true })).toBeNull();
    expect(await repo.updateJob("j-9", "scheduled", { state: "canceled" })).toBeNull();
  });

  it("updates many jobs from their states in a few statements, appending the write's mark, and says which", async () => {
    const many = Array.from({ length: 450 }, (_, i) =>
      aJob({ id: `m-${i}`, state: i % 3 === 0 ? "running" : "scheduled", eventMarks: ["old"] }),
    );
    await repo.insertJobs(many);
    // One job moved on meanwhile: its change does not match.
    await repo.updateJob("m-1", "scheduled", { state: "assigned" });
    const written = await repo.updateJobs(
      many.map((job) =>
        job.state === "running"
          ? { id: job.id, buildId: job.buildId, from: "running" as const, update: { state: "canceling" as const } }
          : {
              id: job.id,
              buildId: job.buildId,
              from: "scheduled" as const,
              update: { state: "canceled" as const, finishedAt: at(9) },
            },
      ),
      "cancel-mark",
    );
    expect(written.filter((w) => !w)).toHaveLength(1);
    expect(written[1]).toBe(false);
    expect(await repo.findJob("m-1")).toMatchObject({ state: "assigned", eventMarks: ["old"] });
    expect(await repo.findJob("m-0")).toMatchObject({ state: "canceling", eventMarks: ["old", "cancel-mark"] });
    expect(await repo.findJob("m-449")).toMatchObject({
      state: "canceled",
      finishedAt: at(9),
      eventMarks: ["old", "cancel-mark"],
    });
    expect(await repo.updateJobs([], "none")).toEqual([]);
  });

  it("writes single jobs' transitions together: each on its agent, with the marks it names", async () => {
    await repo.insertJobs([
      aJob({ id: "t-1", state: "assigned", agent: agent("a1"), eventMarks: ["m1"] }),
      aJob({ id: "t-2", state: "assigned", agent: agent("a2"), eventMarks: [] }),
      aJob({ id: "t-3", state: "running", agent: agent("a3") }),
    ]);
    const written = await repo.updateJobs(
      [
        {
          id: "t-1",
          buildId: "b-1",
          from: "assigned",
          agentId: "a1",
          update: { state: "accepted", eventMarks: ["m1", "w"] },
        },
        // Another agent's job: no match, though its state does.
        {
          id: "t-2",
          buildId: "b-1",
          from: "assigned",
          agentId: "a9",
          update: { state: "accepted", eventMarks: ["w"] },
        },
        { id: "t-3", buildId: "b-1", from: "running", agentId: "a3", update: { state: "passed", eventMarks: ["w"] } },
      ],
      "w",
    );
    expect(written).toEqual([true, false, true]);
    expect(await repo.findJob("t-1")).toMatchObject({ state: "accepted", eventMarks: ["m1", "w"] });
    expect(await repo.findJob("t-2")).toMatchObject({ state: "assigned", eventMarks: [] });
    expect(await repo.findJob("t-3")).toMatchObject({ state: "passed", eventMarks: ["w"] });
  });

  it("finds the jobs of many ids at once, leaving out those that do not exist", async () => {
    await repo.insertJobs([aJob({ id: "f-1" }), aJob({ id: "f-2" }), aJob({ id: "f-3" })]);
    const found = await repo.findJobs(["f-3", "nope", "f-1"]);
    expect(found.map((j) => j.id).sort()).toEqual(["f-1", "f-3"]);
    expect(await repo.findJobs([])).toEqual([]);
  });

  it("merges header times while the job holds the count read (or none was ever kept)", async () => {
    await repo.insertJobs([aJob({ id: "j-1", state: "running" })]);
    const running = { states: ["running"] as const, held: 0, total: 2 };
    expect(await repo.setHeaderTimes("j-1", { "0": "t0", "4": "t4" }, { ...running, states: ["passed"] })).toBeNull();
    expect((await repo.setHeaderTimes("j-1", { "0": "t0", "4": "t4" }, running))?.headerTimes).toEqual({
      "0": "t0",
      "4": "t4",
    });
    // Another writer held 0 too: it lost, since the job holds 2 now.
    expect(await repo.setHeaderTimes("j-1", { "9": "t9" }, { ...running, total: 1 })).toBeNull();
    const later = await repo.setHeaderTimes("j-1", { "9": "t9" }, { states: ["running"], held: 2, total: 3 });
    expect(later?.headerTimes).toEqual({ "0": "t0", "4": "t4", "9": "t9" });
  });

  it("lists scheduled script jobs for dispatch, highest priority then longest runnable first, with their match fields", async () => {
    await repo.insertJobs([
      aJob({ id: "j-late", runnableAt: at(10) }),
      aJob({ id: "j-early", runnableAt: at(1), clusterId: "c-1", agentQueryRules: ["queue=deploy"] }),
      aJob({ id: "j-urgent", priority: 5, runnableAt: at(20) }),
      aJob({ id: "j-lowly", priority: -1, runnableAt: at(0) }),
      aJob({ id: "j-assigned", state: "assigned", priority: 9 }),
      aJob({ id: "j-trigger", type: "trigger", priority: 9 }),
    ]);
    const list = await repo.dispatchableJobs(10);
    expect(ids(list)).toEqual(["j-urgent", "j-early", "j-late", "j-lowly"]);
    expect(list[1]).toEqual({
      id: "j-early",
      organizationId: "o-1",
      clusterId: "c-1",
      agentQueryRules: ["queue=deploy"],
      priority: 0,
      runnableAt: at(1),
    });
    expect(list[0]?.clusterId).toBeNull();
    expect(ids(await repo.dispatchableJobs(2))).toEqual(["j-urgent", "j-early"]);
  });

  it("finds the sweepers' work: jobs due, stale assignments, concurrency groups, jobs of a type", async () => {
    await repo.insertJobs([
      aJob({ id: "j-due2", state: "running", deadlineAt: at(2) }),
      aJob({ id: "j-due1", state: "running", deadlineAt: at(1) }),
      aJob({ id: "j-later", state: "running", deadlineAt: at(9) }),
      aJob({ id: "j-none", state: "running", deadlineAt: null }),
      aJob({ id: "j-old", state: "scheduled", runnableAt: at(0) }),
      aJob({ id: "j-stale2", state: "assigned", assignedAt: at(2) }),
      aJob({ id: "j-stale1", state: "assigned", assignedAt: at(1) }),
      aJob({ id: "j-fresh", state: "assigned", assignedAt: at(8) }),
      aJob({ id: "j-g1", state: "limited", concurrencyGroup: "deploy", concurrency: 1 }),
      aJob({ id: "j-g2", state: "running", concurrencyGroup: "deploy", concurrency: 1 }),
      aJob({ id: "j-g3", state: "limited", concurrencyGroup: "deploy", concurrency: 1, organizationId: "o-2" }),
      aJob({ id: "j-t1", type: "trigger", state: "running" }),
      aJob({ id: "j-t2", type: "trigger", state: "passed" }),
    ]);
    expect(ids(await repo.jobsDue("running", "deadlineAt", at(5), 10))).toEqual(["j-due1", "j-due2"]);
    expect(ids(await repo.jobsDue("running", "deadlineAt", at(5), 1))).toEqual(["j-due1"]);
    expect(ids(await repo.jobsDue("scheduled", "runnableAt", at(5), 10))).toEqual(["j-old"]);
    expect(ids(await repo.staleAssignments(at(5), 10))).toEqual(["j-stale1", "j-stale2"]);
    expect(ids(await repo.groupJobs("o-1", "deploy", ["limited", "running"])).sort()).toEqual(["j-g1", "j-g2"]);
    expect(ids(await repo.groupJobs("o-1", "deploy", ["limited"]))).toEqual(["j-g1"]);
    const groups = await repo.limitedGroups(10);
    expect(groups.map((g) => `${g.organizationId}/${g.group}`).sort()).toEqual(["o-1/deploy", "o-2/deploy"]);
    expect(await repo.limitedGroups(1)).toHaveLength(1);
    expect(ids(await repo.jobsOfType("trigger", ["running", "scheduled"], 10))).toEqual(["j-t1"]);
  });

  it("counts one cluster's unfinished agent jobs when asked", async () => {
    await repo.insertJobs([
      aJob({ id: "j-1", state: "scheduled", clusterId: "c-1" }),
      aJob({ id: "j-2", state: "scheduled", clusterId: "c-2" }),
      aJob({ id: "j-3", state: "running", clusterId: null }),
    ]);
    expect(await repo.countQueueJobs("o-1", ["scheduled", "running"], "c-1")).toEqual([
      { queue: "default", state: "scheduled", count: 1 },
    ]);
    const all = await repo.countQueueJobs("o-1", ["scheduled", "running"]);
    expect(all.reduce((n, r) => n + r.count, 0)).toBe(3);
  });

  it("counts an organization's unfinished agent jobs by queue and state, and a pipeline's counters", async () => {
    await repo.insertJobs([
      aJob({ id: "j-1", state: "scheduled" }),
      aJob({ id: "j-2", state: "scheduled" }),
      aJob({ id: "j-3", state: "running", agentQueryRules: ["queue=gpu"], queue: "gpu" }),
      aJob({ id: "j-4", state: "passed" }),
      aJob({ id: "j-5", state: "scheduled", type: "trigger", queue: null }),
      aJob({ id: "j-6", state: "scheduled", organizationId: "o-2" }),
      aJob({ id: "j-7", state: "waiting", type: "waiter", queue: null }),
    ]);
    const rows = await repo.countQueueJobs("o-1", ["scheduled", "running"]);
    expect([...rows].sort((a, b) => a.queue.localeCompare(b.queue))).toEqual([
      { queue: "default", state: "scheduled", count: 2 },
      { queue: "gpu", state: "running", count: 1 },
    ]);
    await repo.insertBuild(aBuild({ id: "b-1", state: "running" }));
    await repo.insertBuild(aBuild({ id: "b-2", number: 2, state: "scheduled" }));
    await repo.insertBuild(aBuild({ id: "b-3", number: 3, state: "passed", finishedAt: at(1) }));
    expect(await repo.pipelineCounts("p-1")).toEqual({
      scheduledBuilds: 1,
      runningBuilds: 1,
      // j-1, j-2, j-5 (a trigger job counts; the waiter does not); j-6 is of the same pipeline in this fixture.
      scheduledJobs: 4,
      runningJobs: 1,
      waitingJobs: 0,
    });
    await repo.insertBuild(aBuild({ id: "b-4", pipelineId: "p-old", state: "passed", finishedAt: at(1) }));
    await repo.insertBuild(aBuild({ id: "b-5", pipelineId: "p-new", state: "passed", finishedAt: at(9) }));
    expect([...(await repo.activePipelines(at(5)))].sort()).toEqual(["p-1", "p-new"]);
  });

  it("lists builds: a pipeline's by number, others newest first, by every filter, a page at a time", async () => {
    const build = (id: string, number: number, seconds: number, extra: Parameters<typeof aBuild>[0] = {}) =>
      repo.insertBuild(aBuild({ id, number, createdAt: at(seconds), ...extra }));
    await build("b-1", 1, 1, { branch: "dev", commit: "c1", state: "passed", finishedAt: at(2) });
    await build("b-2", 2, 3, { state: "running", metaData: { env: "prod", team: "a" } });
    await build("b-3", 3, 2, {
      state: "passed",
      blocked: true,
      creator: { id: "u-1", name: "U", email: "u@x", avatarUrl: null, createdAt: null },
    });
    await build("b-4", 1, 4, { pipelineId: "p-2", state: "failed", finishedAt: at(6) });
    await build("b-5", 1, 5, { organizationId: "o-2", pipelineId: "p-3" });
    await build("b-6", 4, 3, {});
    const list = async (filter: Partial<Parameters<BuildRepository["listBuilds"]>[0]>, skip = 0, limit = 10) =>
      ids(await repo.listBuilds({ organizationIds: ["o-1"], ...filter }, skip, limit));

    expect(await list({})).toEqual(["b-4", "b-6", "b-2", "b-3", "b-1"]);
    expect(await list({}, 1, 2)).toEqual(["b-6", "b-2"]);
    expect(await list({ pipelineId: "p-1" })).toEqual(["b-6", "b-3", "b-2", "b-1"]);
    expect(await list({ pipelineId: "p-1" }, 3, 2)).toEqual(["b-1"]);
    expect(await list({ branches: ["dev"] })).toEqual(["b-1"]);
    expect(await list({ commits: ["c1", "c9"] })).toEqual(["b-1"]);
    expect(await list({ states: ["passed"] })).toEqual(["b-1"]);
    expect(await list({ states: ["blocked"] })).toEqual(["b-3"]);
    expect(await list({ states: ["blocked", "running"] })).toEqual(["b-2", "b-3"]);
    expect(await list({ creatorId: "u-1" })).toEqual(["b-3"]);
    expect(await list({ metaPairs: ["env=prod", "team=a"] })).toEqual(["b-2"]);
    expect(await list({ metaPairs: ["env=prod", "team=b"] })).toEqual([]);
    expect(await list({ createdFrom: at(2), createdTo: at(4) })).toEqual(["b-6", "b-2", "b-3"]);
    expect(await list({ finishedFrom: at(3) })).toEqual(["b-4"]);
    expect(await list({ organizationIds: ["o-1", "o-2"] })).toEqual(["b-5", "b-4", "b-6", "b-2", "b-3", "b-1"]);
    expect(await list({ organizationIds: [], pipelineIds: ["p-2", "p-3"] })).toEqual(["b-5", "b-4"]);
    expect(await list({ organizationIds: ["o-2"], pipelineIds: ["p-2"] })).toEqual(["b-5", "b-4"]);
  });

  it("finds the unfinished builds whose cancel was requested, up to a limit", async () => {
    await repo.insertBuild(aBuild({ id: "c-1", number: 1, state: "canceling", cancelRequested: true }));
    await repo.insertBuild(
      aBuild({ id: "c-2", number: 2, state: "canceled", cancelRequested: true, finishedAt: at(1) }),
    );
    await repo.insertBuild(aBuild({ id: "c-3", number: 3, state: "running" }));
    await repo.insertBuild(aBuild({ id: "c-4", number: 4, state: "canceling", cancelRequested: true }));
    expect(ids(await repo.unfinishedCancels(10)).sort()).toEqual(["c-1", "c-4"]);
    expect(await repo.unfinishedCancels(1)).toHaveLength(1);
  });

  it("finds a branch's unfinished older builds, a pipeline's build ids, and removes builds with their jobs", async () => {
    await repo.insertBuild(aBuild({ id: "b-1", number: 1, state: "running" }));
    await repo.insertBuild(aBuild({ id: "b-2", number: 2, state: "passed", finishedAt: at(1) }));
    await repo.insertBuild(aBuild({ id: "b-3", number: 3, state: "scheduled", branch: "dev" }));
    await repo.insertBuild(aBuild({ id: "b-4", number: 4, state: "blocked" }));
    await repo.insertBuild(aBuild({ id: "b-5", number: 5, state: "scheduled" }));
    await repo.insertBuild(aBuild({ id: "b-6", number: 1, pipelineId: "p-2" }));
    expect(ids(await repo.unfinishedOnBranch("p-1", "main", 5)).sort()).toEqual(["b-1", "b-4"]);
    expect((await repo.buildIdsOfPipeline("p-1", 10)).sort()).toEqual(["b-1", "b-2", "b-3", "b-4", "b-5"]);
    expect(await repo.buildIdsOfPipeline("p-1", 2)).toHaveLength(2);

    await repo.insertJobs([aJob({ id: "j-1" }), aJob({ id: "j-6", buildId: "b-6", pipelineId: "p-2" })]);
    await repo.removeBuilds(["b-1", "b-2"]);
    expect(await repo.findBuildById("b-1")).toBeNull();
    expect(await repo.findJob("j-1")).toBeNull();
    expect((await repo.findJob("j-6"))?.id).toBe("j-6");
    expect((await repo.buildIdsOfPipeline("p-1", 10)).sort()).toEqual(["b-3", "b-4", "b-5"]);
  });
});
