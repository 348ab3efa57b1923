import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { PipelineStep, ScriptStep } from "@conveyor/ci-rules";
import { JobEventType } from "@conveyor/proto/builds";
import { type Pipeline, PipelineSchema, ProviderSchema } from "@conveyor/proto/pipelines";
import { createMemoryFences, type EventPublisher, type Fences, pipelineFence, stepMessages } from "@conveyor/runtime";
import type { Db } from "mongodb";
import type { BuildsParts } from "./builds-context.js";
import { type BuildsClient, openBuildsService, testDatabases } from "./test-builds-service.js";

// The builds service over its real MongoDB repository (FerretDB or mongod), served in memory.
const databases = testDatabases("it_builds");
let db: Db;
let client: BuildsClient;
let parts: BuildsParts;
const published: string[] = [];

beforeAll(async () => {
  await databases.connect();
  db = databases.create();
  const events: EventPublisher = {
    async publish(subject) {
      published.push(subject);
    },
  };
  ({ client, parts } = await openBuildsService(db, { events }));
});
afterAll(() => databases.close());

function pipeline(steps: PipelineStep[], extra: Omit<Partial<Pipeline>, "$typeName" | "$unknown"> = {}): Pipeline {
  return create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug: "app",
    name: "App",
    defaultBranch: "main",
    allowRebuilds: true,
    steps: stepMessages(steps),
    ...extra,
  });
}

const script = (name: string, extra: Partial<ScriptStep> = {}): ScriptStep => ({
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
    // Concurrent creates share counter increments (number-allocator.ts): still 1 to 15, each once.
    const numbers = builds.map((b) => b.build?.number ?? 0).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
  });

  it("answers a create with the build as stored, whatever first state it takes", async () => {
    // Concurrent creates store their builds in their first states together (one insert) and answer without reading
    // the build back: scheduled, blocked at its first step, and finished at once (every step skipped by its condition).
    const plans = [
      pipeline([script("a"), script("b")]),
      pipeline([{ type: "manual", label: "Deploy?" }, script("c")]),
      pipeline([script("never", { if: 'build.branch == "nope"' })]),
    ];
    const created = await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        client.createBuild({ pipeline: plans[i % 3] as Pipeline, commit: "abc", branch: "main" }),
      ),
    );
    const firsts = created.slice(0, 3).map((c) => ({ state: c.build?.state, blocked: c.build?.blocked }));
    expect(firsts).toEqual([
      { state: "scheduled", blocked: false },
      { state: "passed", blocked: true },
      { state: "not_run", blocked: false },
    ]);
    for (const [i, c] of created.entries()) {
      const stored = await client.getBuild({ pipelineId: plans[i % 3]?.id ?? "", number: c.build?.number ?? 0 });
      expect(c.build).toEqual(stored.build);
    }
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

  it("finishes a cancel a crash cut short before its job writes: the next reconcile cancels what is left", async () => {
    const p = pipeline([script("a"), script("b")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const [a, b] = build?.jobs ?? [];
    // The cancel's first write (the request) stood; its job writes never happened.
    await db
      .collection<{ _id: string }>("builds")
      .updateOne({ _id: build?.id ?? "" }, { $set: { cancelRequested: true, cancelReason: "cut" } });
    // An agent asking for job a is refused (its build is being canceled), and the cancel goes on.
    const refused = await client.transitionJob({ jobId: a?.id ?? "", event: JobEventType.ASSIGN }).catch((e) => e);
    expect(ConnectError.from(refused).code).toBe(Code.FailedPrecondition);
    await parts.cancels.idle();
    const read = await client.getBuild({ pipelineId: p.id, number: build?.number ?? 0 });
    expect(read.build?.state).toBe("canceled");
    expect(read.build?.jobs.map((j) => j.id)).toEqual([a?.id, b?.id]);
    expect(read.build?.jobs.map((j) => j.state)).toEqual(["canceled", "canceled"]);
  });

  it("stops the jobs of cancel_on_build_failing steps once the build is failing, and only those", async () => {
    const stop = { cancel_on_build_failing: true };
    const p = pipeline([
      script("fails"),
      script("running", stop),
      script("queued", stop),
      script("keeps running"),
      script("matrix {{matrix}}", { ...stop, matrix: { setup: { "": ["x", "y"] } } }),
    ]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const [fails, running, , other, mx, my] = build?.jobs ?? [];
    expect([mx?.label, my?.label, mx?.matrix, my?.matrix]).toEqual(["matrix x", "matrix y", { "": "x" }, { "": "y" }]);
    for (const job of [running, other, mx]) {
      for (const event of [JobEventType.ASSIGN, JobEventType.ACCEPT, JobEventType.START]) {
        await client.transitionJob({ jobId: job?.id ?? "", event });
      }
    }
    const before = await client.getBuild({ pipelineId: p.id, number: build?.number ?? 0 });
    expect(before.build?.jobs.map((j) => j.state)).toEqual([
      "scheduled",
      "running",
      "scheduled",
      "running",
      "running",
      "scheduled",
    ]);

    const failing = await drive(fails?.id ?? "", 1);
    expect(failing.build?.state).toBe("failing");
    const states = Object.fromEntries((failing.build?.jobs ?? []).map((j) => [j.label, j.state]));
    expect(states).toEqual({
      fails: "failed",
      running: "canceling",
      queued: "canceled",
      "keeps running": "running",
      "matrix x": "canceling",
      "matrix y": "canceled",
    });
    // The agents stop theirs; the build goes on failing until the last job ends, then fails.
    await client.transitionJob({ jobId: running?.id ?? "", event: JobEventType.CANCELED });
    const stillFailing = await client.transitionJob({ jobId: mx?.id ?? "", event: JobEventType.CANCELED });
    expect(stillFailing.build?.state).toBe("failing");
    const done = await client.transitionJob({ jobId: other?.id ?? "", event: JobEventType.FINISH, exitStatus: 0 });
    expect(done.build?.state).toBe("failed");
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
    const get = async (n: number | undefined) => (await client.getBuild({ pipelineId: p.id, number: n ?? 0 })).build;
    const first = await client.createBuild({ pipeline: p, commit: "1", branch: "main" });
    const second = await client.createBuild({ pipeline: p, commit: "2", branch: "main" });
    // The second build skipped the first, still queued; its own job now runs on an agent.
    expect((await get(first.build?.number))?.state).toBe("skipped");
    const jobId = second.build?.jobs[0]?.id ?? "";
    for (const event of [JobEventType.ASSIGN, JobEventType.ACCEPT, JobEventType.START]) {
      await client.transitionJob({ jobId, event });
    }
    expect((await get(second.build?.number))?.state).toBe("running");
    const other = await client.createBuild({ pipeline: p, commit: "x", branch: "other" });
    const third = await client.createBuild({ pipeline: p, commit: "3", branch: "main" });
    // The third cancels the running second: its job waits for its agent to stop (canceling).
    const canceled = await get(second.build?.number);
    expect(canceled?.state).toBe("canceling");
    expect(canceled?.cancelReason).toBe(`superseded by build #${third.build?.number}`);
    expect(canceled?.jobs.map((j) => j.state)).toEqual(["canceling"]);
    // Builds of another branch, and the new build itself, are left alone.
    expect((await get(other.build?.number))?.state).toBe("scheduled");
    expect((await get(third.build?.number))?.state).toBe("scheduled");
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
    const { parts } = await openBuildsService(db, {
      events: {
        async publish(subject, _schema, value) {
          seen.push({ subject, pipelineId: String((value as { pipelineId?: string }).pipelineId ?? "") });
        },
      },
    });
    const p = pipeline([script("a")]);
    await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    await parts.duties.republishCounts();
    expect(seen).toContainEqual({ subject: "ci.builds.pipeline_counts_changed", pipelineId: p.id });
  });

  it("reads the database for active pipelines on the first re-announcement only, then re-announces its own", async () => {
    const seen: string[] = [];
    let scans = 0;
    const { client: own$, parts } = await openBuildsService(db, {
      wrap: {
        repo: (repo) => ({
          ...repo,
          async activePipelines(since) {
            scans++;
            return repo.activePipelines(since);
          },
        }),
      },
      events: {
        async publish(subject, _schema, value) {
          if (subject === "ci.builds.pipeline_counts_changed")
            seen.push(String((value as { pipelineId?: string }).pipelineId ?? ""));
        },
      },
    });
    // A build made by another replica (the shared client's service), then one by this one.
    const elsewhere = pipeline([script("a")]);
    await client.createBuild({ pipeline: elsewhere, commit: "abc", branch: "main" });
    await parts.duties.republishCounts();
    expect(scans).toBe(1);
    expect(seen).toContain(elsewhere.id);
    const own = pipeline([script("a")]);
    await own$.createBuild({ pipeline: own, commit: "abc", branch: "main" });
    await parts.duties.countsIdle();
    seen.length = 0;
    await parts.duties.republishCounts();
    expect(scans).toBe(1);
    expect(seen).toContain(own.id);
    // The other replica re-announces its own pipeline.
    expect(seen).not.toContain(elsewhere.id);
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

describe("jobs on MongoDB", () => {
  const agentOf = (id: string, tags: string[] = []) => ({
    id,
    name: `${id}-name`,
    hostname: `${id}.local`,
    metaData: tags,
  });

  async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
    try {
      await call;
      return "ok";
    } catch (err) {
      return ConnectError.from(err).code;
    }
  }

  /** Assigns a job to an agent, which accepts and starts it. */
  async function runOn(jobId: string, agentId: string) {
    await client.assignJob({ jobId, agent: agentOf(agentId) });
    await client.acceptJob({ jobId, agentId });
    return client.transitionJob({ jobId, event: JobEventType.START, agentId });
  }

  it("gives the accepting agent every variable its bootstrap requires, and the user's env in order", async () => {
    const p = pipeline(
      [
        script("test", {
          command: "make test",
          agent_query_rules: ["queue=linux"],
          timeout_in_minutes: 15,
          env: {
            FROM_STEP: "step",
            FROM_BUILD: "step",
            FROM_YAML: "step",
            FROM_PIPELINE: "step",
            BUILDKITE_BRANCH: "x",
          },
        }),
      ],
      {
        slug: "web-app",
        repository: "git@github.com:acme/web-app.git",
        provider: create(ProviderSchema, { id: "github" }),
        env: { FROM_PIPELINE: "pipeline", FROM_YAML: "pipeline", FROM_BUILD: "pipeline", ONLY_PIPELINE: "pipeline" },
        configurationEnv: { FROM_YAML: "yaml", FROM_BUILD: "yaml", ONLY_YAML: "yaml" },
      },
    );
    const { build } = await client.createBuild({
      pipeline: p,
      organizationSlug: "acme",
      commit: "0123456789abcdef0123456789abcdef01234567",
      branch: "feature/x",
      message: "Build it",
      env: { FROM_BUILD: "build", ONLY_BUILD: "build" },
    });
    const jobId = build?.jobs[0]?.id ?? "";
    await client.assignJob({ jobId, agent: agentOf("agent-env", ["queue=linux", "os=linux", "docker-version=27"]) });
    const { env, job } = await client.acceptJob({ jobId, agentId: "agent-env" });
    expect(job?.state).toBe("accepted");
    const required = [
      "BUILDKITE_JOB_ID",
      "BUILDKITE_REPO",
      "BUILDKITE_COMMIT",
      "BUILDKITE_BRANCH",
      "BUILDKITE_AGENT_NAME",
      "BUILDKITE_ORGANIZATION_SLUG",
      "BUILDKITE_PIPELINE_SLUG",
      "BUILDKITE_PIPELINE_PROVIDER",
      "BUILDKITE_COMMAND",
    ];
    for (const name of required)
      expect([name, typeof env[name], (env[name] ?? "").length > 0]).toEqual([name, "string", true]);
    for (const [name, value] of Object.entries(env)) expect([name, typeof value]).toEqual([name, "string"]);
    expect(env).toMatchObject({
      BUILDKITE_JOB_ID: jobId,
      BUILDKITE_BUILD_ID: build?.id,
      BUILDKITE_BUILD_NUMBER: String(build?.number),
      BUILDKITE_REPO: "git@github.com:acme/web-app.git",
      BUILDKITE_COMMIT: "0123456789abcdef0123456789abcdef01234567",
      BUILDKITE_BRANCH: "feature/x",
      BUILDKITE_MESSAGE: "Build it",
      BUILDKITE_AGENT_ID: "agent-env",
      BUILDKITE_AGENT_NAME: "agent-env-name",
      BUILDKITE_AGENT_META_DATA_QUEUE: "linux",
      BUILDKITE_AGENT_META_DATA_DOCKER_VERSION: "27",
      BUILDKITE_ORGANIZATION_SLUG: "acme",
      BUILDKITE_PIPELINE_SLUG: "web-app",
      BUILDKITE_PIPELINE_PROVIDER: "github",
      BUILDKITE_COMMAND: "make test",
      BUILDKITE_TIMEOUT: "15",
      BUILDKITE_PULL_REQUEST: "false",
      CI: "true",
      BUILDKITE: "true",
    });
    // pipeline env < the YAML's top-level env < build env < step env
    expect(env).toMatchObject({
      ONLY_PIPELINE: "pipeline",
      ONLY_YAML: "yaml",
      ONLY_BUILD: "build",
      FROM_PIPELINE: "step",
      FROM_YAML: "step",
      FROM_BUILD: "step",
      FROM_STEP: "step",
    });
    const second = await client.createBuild({
      pipeline: pipeline([script("plain")], { env: p.env, configurationEnv: p.configurationEnv }),
      commit: "c",
      branch: "main",
      env: { FROM_BUILD: "build" },
    });
    const plainId = second.build?.jobs[0]?.id ?? "";
    await client.assignJob({ jobId: plainId, agent: agentOf("agent-plain") });
    const plain = (await client.acceptJob({ jobId: plainId, agentId: "agent-plain" })).env;
    expect([plain.FROM_PIPELINE, plain.FROM_YAML, plain.FROM_BUILD]).toEqual(["pipeline", "yaml", "build"]);
    expect(plain.BUILDKITE_TIMEOUT).toBe("false");
  });

  it("records a finish's exit status, signal and reason, refuses another agent's finish, and the build follows", async () => {
    const p = pipeline([script("a"), script("b")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const [a, b] = build?.jobs ?? [];
    const aId = a?.id ?? "";
    await runOn(aId, "agent-a");
    const intruder = client.transitionJob({
      jobId: aId,
      event: JobEventType.FINISH,
      exitStatus: 0,
      agentId: "agent-x",
    });
    expect(await codeOf(intruder)).toBe(Code.FailedPrecondition);
    expect((await client.getJob({ jobId: aId })).job?.state).toBe("running");

    const failed = await client.transitionJob({
      jobId: aId,
      event: JobEventType.FINISH,
      exitStatus: -1,
      signal: "SIGKILL",
      signalReason: "agent_stop",
      agentId: "agent-a",
    });
    expect(failed.job).toMatchObject({
      state: "failed",
      exitStatus: -1,
      signal: "SIGKILL",
      signalReason: "agent_stop",
    });
    expect(failed.build?.state).toBe("failing");
    const stored = (await client.getJob({ jobId: aId })).job;
    expect(stored).toMatchObject({ state: "failed", exitStatus: -1, signal: "SIGKILL", signalReason: "agent_stop" });
    expect(stored?.finishedAt).toBeDefined();
    const twice = client.transitionJob({ jobId: aId, event: JobEventType.FINISH, exitStatus: 0, agentId: "agent-a" });
    expect(await codeOf(twice)).toBe(Code.FailedPrecondition);

    await runOn(b?.id ?? "", "agent-b");
    const done = await client.transitionJob({
      jobId: b?.id ?? "",
      event: JobEventType.FINISH,
      exitStatus: 0,
      agentId: "agent-b",
    });
    expect(done.job).toMatchObject({ state: "passed", exitStatus: 0, signal: "", signalReason: "" });
    expect(done.build?.state).toBe("failed");
    expect(done.build?.finishedAt).toBeDefined();
    expect((await client.getBuild({ pipelineId: p.id, number: build?.number ?? 0 })).build?.state).toBe("failed");
  });

  it("ends a job finished while canceling as canceled, whatever its exit status, and the build canceled", async () => {
    const p = pipeline([script("a")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const jobId = build?.jobs[0]?.id ?? "";
    await runOn(jobId, "agent-c");
    const canceling = await client.cancelBuild({ pipelineId: p.id, number: build?.number ?? 0, reason: "stop" });
    expect(canceling.build?.state).toBe("canceling");
    expect(canceling.build?.jobs[0]?.state).toBe("canceling");
    const finished = await client.transitionJob({
      jobId,
      event: JobEventType.FINISH,
      exitStatus: 0,
      signal: "SIGTERM",
      signalReason: "cancel",
      agentId: "agent-c",
    });
    expect(finished.job).toMatchObject({ state: "canceled", exitStatus: 0, signal: "SIGTERM", signalReason: "cancel" });
    expect(finished.build?.state).toBe("canceled");
    expect(finished.build?.finishedAt).toBeDefined();
  });

  it("changes the timeout of unfinished command jobs only, from 1 to 10080 minutes", async () => {
    const p = pipeline([script("a"), { type: "waiter" }, { type: "manual", label: "Go?" }, script("b")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const [a, wait, block, b] = (build?.jobs ?? []).map((j) => j.id);
    expect((await client.updateJob({ jobId: a ?? "", timeoutInMinutes: 10080 })).job?.timeoutInMinutes).toBe(10080);
    expect((await client.updateJob({ jobId: a ?? "", timeoutInMinutes: 1 })).job?.timeoutInMinutes).toBe(1);
    expect((await client.getJob({ jobId: a ?? "" })).job?.timeoutInMinutes).toBe(1);
    expect((await client.updateJob({ jobId: a ?? "" })).job?.timeoutInMinutes).toBe(1);
    for (const minutes of [0, -5, 10081]) {
      expect([minutes, await codeOf(client.updateJob({ jobId: a ?? "", timeoutInMinutes: minutes }))]).toEqual([
        minutes,
        Code.InvalidArgument,
      ]);
    }
    expect((await client.getJob({ jobId: a ?? "" })).job?.timeoutInMinutes).toBe(1);
    // A waiting command job may be changed; a waiter and a block step may not.
    expect((await client.updateJob({ jobId: b ?? "", timeoutInMinutes: 30 })).job?.timeoutInMinutes).toBe(30);
    expect(await codeOf(client.updateJob({ jobId: wait ?? "", timeoutInMinutes: 30 }))).toBe(Code.FailedPrecondition);
    expect(await codeOf(client.updateJob({ jobId: block ?? "", timeoutInMinutes: 30 }))).toBe(Code.FailedPrecondition);
    // A running job may; a finished one may not.
    await runOn(a ?? "", "agent-t");
    expect((await client.updateJob({ jobId: a ?? "", timeoutInMinutes: 60 })).job?.timeoutInMinutes).toBe(60);
    await client.transitionJob({ jobId: a ?? "", event: JobEventType.FINISH, exitStatus: 0 });
    expect(await codeOf(client.updateJob({ jobId: a ?? "", timeoutInMinutes: 90 }))).toBe(Code.FailedPrecondition);
    expect((await client.getJob({ jobId: a ?? "" })).job?.timeoutInMinutes).toBe(60);
    expect(await codeOf(client.updateJob({ jobId: randomUUID(), timeoutInMinutes: 5 }))).toBe(Code.NotFound);
    expect(await codeOf(client.updateJob({ jobId: randomUUID() }))).toBe(Code.NotFound);
  });

  it("reprioritizes a command job no agent has taken, within its build, and dispatch lists it by its new priority", async () => {
    const p = pipeline([script("a"), script("b"), { type: "waiter" }, script("c")]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const number = build?.number ?? 0;
    const [a, b, wait, c] = (build?.jobs ?? []).map((j) => j.id);
    const order = async () =>
      (await client.listDispatchableJobs({})).jobs.map((j) => j.id).filter((id) => id === a || id === b);
    expect(await order()).toEqual([a, b]);
    const raised = await client.updateJob({ jobId: b ?? "", priority: 5, pipelineId: p.id, number });
    expect(raised.job?.priority).toBe(5);
    expect(await order()).toEqual([b, a]);
    // A waiting job may be; a waiter may not; nor a job named under another build or pipeline.
    expect((await client.updateJob({ jobId: c ?? "", priority: -3 })).job?.priority).toBe(-3);
    expect(await codeOf(client.updateJob({ jobId: wait ?? "", priority: 1 }))).toBe(Code.FailedPrecondition);
    const noBuild = client.updateJob({ jobId: a ?? "", priority: 9, pipelineId: p.id, number: number + 1 });
    await expect(noBuild).rejects.toThrow("No build found");
    const other = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const elsewhere = client.updateJob({ jobId: a ?? "", priority: 9, pipelineId: p.id, number: other.build?.number });
    await expect(elsewhere).rejects.toThrow("No job found");
    expect(await codeOf(client.updateJob({ jobId: a ?? "", priority: 9, pipelineId: randomUUID(), number }))).toBe(
      Code.NotFound,
    );
    for (const priority of [1_000_001, -1_000_001]) {
      expect(await codeOf(client.updateJob({ jobId: a ?? "", priority }))).toBe(Code.InvalidArgument);
    }
    // Once an agent has it, its priority no longer changes.
    await runOn(a ?? "", "agent-p");
    expect(await codeOf(client.updateJob({ jobId: a ?? "", priority: 9 }))).toBe(Code.FailedPrecondition);
    expect((await client.getJob({ jobId: a ?? "" })).job?.priority).toBe(0);
  });

  it("returns a job with its organization, pipeline, build number and queue", async () => {
    const p = pipeline([
      script("linux", { agent_query_rules: ["os=linux", "queue=linux-large"] }),
      script("plain"),
      { type: "waiter" },
    ]);
    const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main" });
    const [linux, plain, wait] = build?.jobs ?? [];
    const common = {
      organizationId: p.organizationId,
      pipelineId: p.id,
      buildNumber: build?.number,
      buildId: build?.id,
    };
    expect((await client.getJob({ jobId: linux?.id ?? "" })).job).toMatchObject({
      ...common,
      id: linux?.id,
      queue: "linux-large",
      agentQueryRules: ["os=linux", "queue=linux-large"],
      type: "script",
    });
    expect((await client.getJob({ jobId: plain?.id ?? "" })).job).toMatchObject({ ...common, queue: "default" });
    expect((await client.getJob({ jobId: wait?.id ?? "" })).job).toMatchObject({
      ...common,
      queue: "",
      type: "waiter",
    });
    expect(await codeOf(client.getJob({ jobId: randomUUID() }))).toBe(Code.NotFound);
    expect(await codeOf(client.getJob({ jobId: "" }))).toBe(Code.NotFound);
  });
});

describe("builds service deciding on the pipeline as it is now", () => {
  /** A client of a builds service whose pipelines lookup answers `now`, whatever copy the caller sent. */
  async function clientSeeing(now: Pipeline | null, fences?: Fences, lookups?: { count: number }) {
    const { client } = await openBuildsService(db, {
      triggers: {
        pipeline: async () => {
          if (lookups) lookups.count++;
          return now;
        },
        mayBuild: async () => true,
        ruleAllows: async () => true,
      },
      ...(fences ? { fences } : {}),
    });
    return client;
  }

  it("refuses a build or rebuild of a pipeline archived since the caller read it, and of one deleted since", async () => {
    const stale = pipeline([script("a")]);
    const archivedNow = create(PipelineSchema, { ...stale, archivedAt: { seconds: 1n, nanos: 0 } as never });
    await (await clientSeeing(stale)).createBuild({ pipeline: stale, commit: "a", branch: "main" });
    for (const [now, code] of [
      [archivedNow, Code.FailedPrecondition],
      [null, Code.NotFound],
    ] as const) {
      const c = await clientSeeing(now);
      await expect(c.createBuild({ pipeline: stale, commit: "a", branch: "main" })).rejects.toMatchObject({ code });
      await expect(c.rebuildBuild({ pipeline: stale, number: 1 })).rejects.toMatchObject({ code });
    }
    // Nothing was created: the only build is the first one.
    const reader = await clientSeeing(stale);
    expect((await reader.getBuild({ pipelineId: stale.id, number: 1 })).build?.number).toBe(1);
    await expect(reader.getBuild({ pipelineId: stale.id, number: 2 })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("trusts a copy as new as the pipeline's fence without reading it again, and reads one older than it", async () => {
    const fences = createMemoryFences();
    const copy = pipeline([script("cached")], { version: 3 });
    const archivedNow = create(PipelineSchema, { ...copy, version: 4, archivedAt: { seconds: 1n, nanos: 0 } as never });
    const lookups = { count: 0 };
    const c = await clientSeeing(archivedNow, fences, lookups);
    // No change raised the fence past the copy (fence 0, then 3): the copy is current, no lookup.
    expect((await c.createBuild({ pipeline: copy, commit: "a", branch: "main" })).build?.jobs[0]?.name).toBe("cached");
    await fences.raise(pipelineFence(copy.id), 3);
    await c.createBuild({ pipeline: copy, commit: "a", branch: "main" });
    expect(lookups.count).toBe(0);
    // The archive raised it to 4 before it was written: the copy may be stale, and the pipeline as it is now says no.
    await fences.raise(pipelineFence(copy.id), 4);
    await expect(c.createBuild({ pipeline: copy, commit: "a", branch: "main" })).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    await expect(c.rebuildBuild({ pipeline: copy, number: 1 })).rejects.toMatchObject({
      code: Code.FailedPrecondition,
    });
    expect(lookups.count).toBe(2);
    // Another pipeline's fence says nothing about this one.
    await fences.raise(pipelineFence(randomUUID()), 99);
    await c.createBuild({ pipeline: pipeline([script("other")], { version: 0 }), commit: "a", branch: "main" });
    expect(lookups.count).toBe(2);
  });

  it("reads the pipeline again when its fence cannot be read (NATS down)", async () => {
    const copy = pipeline([script("cached")], { version: 3 });
    const current = create(PipelineSchema, { ...copy, steps: stepMessages([script("current")]) });
    const lookups = { count: 0 };
    const down: Fences = {
      read: async () => Promise.reject(new Error("NATS is down")),
      raise: async () => Promise.reject(new Error("NATS is down")),
    };
    const c = await clientSeeing(current, down, lookups);
    const { build } = await c.createBuild({ pipeline: copy, commit: "a", branch: "main" });
    expect(build?.jobs.map((j) => j.name)).toEqual(["current"]);
    expect(lookups.count).toBe(1);
  });

  it("plans a build from the pipeline's current steps", async () => {
    const stale = pipeline([script("old")]);
    const current = create(PipelineSchema, { ...stale, steps: stepMessages([script("new")]) });
    const c = await clientSeeing(current);
    const { build } = await c.createBuild({ pipeline: stale, commit: "a", branch: "main" });
    expect(build?.jobs.map((j) => j.name)).toEqual(["new"]);
  });
});
