import { randomUUID } from "node:crypto";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService, JobEventType } from "@conveyor/proto/builds";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { createLogger, type EventPublisher } from "@conveyor/runtime";
import { MongoClient } from "mongodb";
import { createMongoBuildRepository } from "./build-repository.js";
import { createBuildDomain, createBuildService } from "./build-service.js";

// The builds service over its real MongoDB repository (FerretDB or mongod), served in memory.
const dbName = `it_builds_${Date.now()}`;
let mongo: MongoClient;
let client: ReturnType<typeof createClient<typeof BuildsService>>;
const published: string[] = [];

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  const events: EventPublisher = {
    async publish(subject) {
      published.push(subject);
    },
  };
  const service = createBuildService({
    repo: await createMongoBuildRepository(mongo.db(dbName)),
    events,
    logger: createLogger("test", "silent"),
  });
  client = createClient(
    BuildsService,
    createRouterTransport(({ service: s }) => s(BuildsService, service)),
  );
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

function pipeline(steps: JsonObject[], extra: Omit<Partial<Pipeline>, "$typeName" | "$unknown"> = {}): Pipeline {
  return create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug: "app",
    name: "App",
    defaultBranch: "main",
    allowRebuilds: true,
    steps,
    ...extra,
  });
}

const script = (name: string, extra: JsonObject = {}): JsonObject => ({
  type: "script",
  name,
  command: `echo ${name}`,
  agent_query_rules: [],
  ...extra,
});

async function drive(jobId: string, exitStatus = 0) {
  for (const event of [JobEventType.ASSIGN, JobEventType.ACCEPT, JobEventType.START]) {
    await client.transitionJob({ jobId, event });
  }
  return client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus });
}

describe("builds service on MongoDB", () => {
  it("numbers concurrent builds of a pipeline without duplicates", async () => {
    const p = pipeline([script("a")]);
    const builds = await Promise.all(
      Array.from({ length: 15 }, () => client.createBuild({ pipeline: p, commit: "abc", branch: "main" })),
    );
    const numbers = builds.map((b) => b.build?.number ?? 0).sort((a, b) => a - b);
    expect(new Set(numbers).size).toBe(15);
    expect(numbers[0]).toBe(1);
  });

  it("lets exactly one of many concurrent transitions of a job win", async () => {
    const p = pipeline([script("a")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const jobId = build?.jobs[0]?.id ?? "";
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => client.transitionJob({ jobId, event: JobEventType.ASSIGN })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(ConnectError.from(refused.reason).code).toBe(Code.FailedPrecondition);
  });

  it("runs jobs behind a wait step only after the ones before it, and passes", async () => {
    const p = pipeline([script("one", { parallelism: 2 }), { type: "waiter" }, script("two")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    expect(build?.state).toBe("scheduled");
    const [a, b, wait, two] = build?.jobs ?? [];
    expect([a?.state, b?.state, wait?.state, two?.state]).toEqual(["scheduled", "scheduled", "waiting", "waiting"]);
    expect([a?.parallelGroupIndex, b?.parallelGroupIndex, a?.parallelGroupTotal]).toEqual([0, 1, 2]);
    const afterA = await drive(a?.id ?? "");
    expect(afterA.build?.state).toBe("running");
    expect(afterA.build?.startedAt).toBeDefined();
    const afterB = await drive(b?.id ?? "");
    const second = afterB.build?.jobs.find((j) => j.id === two?.id);
    expect(second?.state).toBe("scheduled");
    const done = await drive(two?.id ?? "");
    expect(done.build?.state).toBe("passed");
    expect(done.build?.finishedAt).toBeDefined();
    expect(published).toEqual(
      expect.arrayContaining(["ci.builds.build_created", "ci.builds.build_finished", "ci.builds.job_state_changed"]),
    );
  });

  it("fails, cancels with canceling while a job runs, and refuses to cancel a finished build", async () => {
    const p = pipeline([script("a"), script("b")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const [a, b] = build?.jobs ?? [];
    const failing = await drive(a?.id ?? "", 1);
    expect(failing.build?.state).toBe("failing");
    await client.transitionJob({ jobId: b?.id ?? "", event: JobEventType.ASSIGN });
    await client.transitionJob({ jobId: b?.id ?? "", event: JobEventType.ACCEPT });
    const canceling = await client.cancelBuild({ pipelineId: p.id, number: build?.number ?? 0 });
    expect(canceling.build?.state).toBe("canceling");
    const stopped = await client.transitionJob({ jobId: b?.id ?? "", event: JobEventType.CANCELED });
    expect(stopped.build?.state).toBe("canceled");
    const again = await client
      .cancelBuild({ pipelineId: p.id, number: build?.number ?? 0 })
      .catch((e) => ConnectError.from(e));
    expect(again).toBeInstanceOf(ConnectError);
    expect((again as ConnectError).code).toBe(Code.FailedPrecondition);
  });

  it("shows a build waiting at a block step as blocked with the step's blocked_state", async () => {
    const p = pipeline([script("a"), { type: "manual", label: "Go?", blocked_state: "running" }, script("b")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const after = await drive(build?.jobs[0]?.id ?? "");
    expect(after.build).toMatchObject({ state: "running", blocked: true });
    const unblocked = await client.transitionJob({ jobId: build?.jobs[1]?.id ?? "", event: JobEventType.UNBLOCK });
    expect(unblocked.build?.blocked).toBe(false);
    expect(unblocked.build?.jobs[2]?.state).toBe("scheduled");
  });

  it("refuses archived pipelines and branch filter mismatches, unless told to ignore the filter", async () => {
    const archived = pipeline([script("a")], { archivedAt: { seconds: 1n, nanos: 0 } as Pipeline["archivedAt"] });
    await expect(client.createBuild({ pipeline: archived, commit: "a", branch: "main" })).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    const filtered = pipeline([script("a")], { branchConfiguration: "main release/*" });
    await expect(client.createBuild({ pipeline: filtered, commit: "a", branch: "feature" })).rejects.toThrow(
      /branch filter/,
    );
    const forced = await client.createBuild({
      pipeline: filtered,
      commit: "a",
      branch: "feature",
      ignorePipelineBranchFilters: true,
    });
    expect(forced.build?.branch).toBe("feature");
    await expect(client.createBuild({ pipeline: filtered, commit: "", branch: "" })).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
  });

  it("skips queued and cancels running builds of the same branch when the pipeline says so", async () => {
    const p = pipeline([script("a")], { skipQueuedBranchBuilds: true, cancelRunningBranchBuilds: true });
    const first = await client.createBuild({ pipeline: p, commit: "1", branch: "main" });
    const second = await client.createBuild({ pipeline: p, commit: "2", branch: "main" });
    await drive(second.build?.jobs[0]?.id ?? "").catch(() => undefined);
    const other = await client.createBuild({ pipeline: p, commit: "x", branch: "other" });
    const third = await client.createBuild({ pipeline: p, commit: "3", branch: "main" });
    expect(third.build?.number).toBeGreaterThan(0);
    const get = async (n: number | undefined) => (await client.getBuild({ pipelineId: p.id, number: n ?? 0 })).build;
    expect((await get(first.build?.number))?.state).toBe("skipped");
    expect((await get(other.build?.number))?.state).toBe("scheduled");
  });

  it("rebuilds with a new number and a link to the original", async () => {
    const p = pipeline([script("a")]);
    const { build } = await client.createBuild({
      pipeline: p,
      commit: "abc",
      branch: "main",
      message: "hello",
      env: { A: "1" },
      metaData: { "release.version": "1.2" },
    });
    const { build: again } = await client.rebuildBuild({ pipeline: p, number: build?.number ?? 0 });
    expect(again).toMatchObject({
      commit: "abc",
      branch: "main",
      message: "hello",
      env: { A: "1" },
      metaData: { "release.version": "1.2" },
    });
    expect(again?.rebuiltFrom).toMatchObject({ id: build?.id, number: build?.number });
    expect(again?.number).toBe((build?.number ?? 0) + 1);
  });

  it("re-announces the counters of recently active pipelines", async () => {
    const seen: Array<{ subject: string; pipelineId: string }> = [];
    const domain = createBuildDomain({
      repo: await createMongoBuildRepository(mongo.db(dbName)),
      events: {
        async publish(subject, _schema, value) {
          seen.push({ subject, pipelineId: String((value as { pipelineId?: string }).pipelineId ?? "") });
        },
      },
      logger: createLogger("test", "silent"),
    });
    const p = pipeline([script("a")]);
    await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    await domain.republishCounts();
    expect(seen).toContainEqual({ subject: "ci.builds.pipeline_counts_changed", pipelineId: p.id });
  });

  it("filters lists by branch, state, meta-data and creation time", async () => {
    const p = pipeline([script("a")]);
    const org = [p.organizationId];
    await client.createBuild({ pipeline: p, commit: "c1", branch: "main", metaData: { env: "prod" } });
    await client.createBuild({ pipeline: p, commit: "c2", branch: "dev" });
    const main = await client.listBuilds({ organizationIds: org, branches: ["main"] });
    expect(main.builds.map((b) => b.commit)).toEqual(["c1"]);
    const meta = await client.listBuilds({ organizationIds: org, metaData: { env: "prod" } });
    expect(meta.builds).toHaveLength(1);
    const newestFirst = await client.listBuilds({ organizationIds: org, pipelineId: p.id, perPage: 1 });
    expect(newestFirst.builds[0]?.commit).toBe("c2");
    expect(newestFirst.hasMore).toBe(true);
    const scheduled = await client.listBuilds({ organizationIds: org, states: ["scheduled"], excludeJobs: true });
    expect(scheduled.builds).toHaveLength(2);
    expect(scheduled.builds[0]?.jobs).toEqual([]);
    const none = await client.listBuilds({ organizationIds: org, states: ["finished"] });
    expect(none.builds).toHaveLength(0);
  });
});
