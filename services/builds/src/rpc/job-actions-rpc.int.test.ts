import { randomUUID } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { SweepSettings } from "../jobs/job-sweeps.js";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";

// What people and the server's clocks do to jobs, over the real MongoDB-wire server: unblocking with fields
// (meta-data, refusals that change nothing), manual and automatic retries with include_retried_jobs, and the
// sweeps (timing out, timed out after the grace, scheduled jobs expiring) with an injected clock. The sweeps read
// every job of a database, so each service here gets a database of its own.
const databases = testDatabases("it_job_actions");

beforeAll(() => databases.connect());
afterAll(() => databases.close());

const pipelineOf = pipelineFromYaml;

const ann = { id: randomUUID(), name: "Ann", email: "ann@example.com" };

async function newBuild(client: Client, p: Pipeline) {
  const { build } = await client.createBuild({
    pipeline: p,
    commit: "abc",
    branch: "main",
    organizationSlug: "acme",
    creator: ann,
  });
  if (!build) throw new Error("no build");
  return build;
}

const idOf = (build: { jobs: Array<{ name: string; id: string }> }, name: string) => {
  const job = build.jobs.find((j) => j.name === name);
  if (!job) throw new Error(`no job ${name} in ${build.jobs.map((j) => j.name).join(", ")}`);
  return job.id;
};

/** Runs a job as an agent would: assign, accept, start. */
async function start(client: Client, jobId: string) {
  await client.transitionJob({ jobId, event: JobEventType.ASSIGN, agent: { id: "agent-1", name: "box" } });
  await client.transitionJob({ jobId, event: JobEventType.ACCEPT, agentId: "agent-1" });
  return client.transitionJob({ jobId, event: JobEventType.START });
}

/** Runs a job to the end with `exitStatus`. */
async function run(client: Client, jobId: string, exitStatus = 0, extra: { signalReason?: string } = {}) {
  await start(client, jobId);
  return client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus, ...extra });
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded");
}

const DEPLOY = `
steps:
  - label: test
    command: make test
  - block: Deploy?
    key: gate
    blocked_state: running
    fields:
      - text: Release
        key: release
        format: "v[0-9]+\\\\.[0-9]+\\\\.[0-9]+"
      - select: Regions
        key: regions
        multiple: true
        options:
          - {label: Europe, value: eu}
          - {label: America, value: us}
      - select: Channel
        key: channel
        required: false
        options:
          - {label: Stable, value: stable}
          - {label: Beta, value: beta}
      - text: Notes
        key: notes
        required: false
        default: none
  - label: deploy
    command: ./deploy.sh
`;

describe("unblocking block and input steps", () => {
  let client: Client;
  beforeAll(async () => {
    ({ client } = await openBuildsService(databases.create()));
  });

  /** A deploy build whose test passed, waiting at the block. */
  async function blockedBuild() {
    const p = pipelineOf(DEPLOY);
    const build = await newBuild(client, p);
    const after = await run(client, idOf(build, "test"));
    expect(after.build).toMatchObject({ state: "running", blocked: true });
    return { p, build, gate: idOf(build, "Deploy?"), deploy: idOf(build, "deploy") };
  }

  const values = (fields: Record<string, string[]>) =>
    Object.fromEntries(Object.entries(fields).map(([key, v]) => [key, { values: v }]));

  it("stores the submitted values (and defaults) as build meta-data, records the unblocker and releases the deploy", async () => {
    const { p, build, gate, deploy } = await blockedBuild();
    const { job } = await client.unblockJob({
      pipelineId: p.id,
      number: build.number,
      jobId: gate,
      user: ann,
      fields: values({ release: ["v1.2.3"], regions: ["eu", "us"] }),
    });
    expect(job).toMatchObject({ id: gate, state: "unblocked", unblockedBy: { id: ann.id, name: "Ann" } });
    expect(job?.unblockedAt).toBeDefined();
    const { build: after } = await client.getBuild({ pipelineId: p.id, number: build.number });
    expect(after?.metaData).toEqual({ release: "v1.2.3", regions: "eu\nus", notes: "none" });
    expect(after).toMatchObject({ blocked: false, state: "running" });
    expect(after?.jobs.find((j) => j.id === deploy)?.state).toBe("scheduled");
    const read = await client.getBuildMetaData({ buildId: build.id, key: "regions" });
    expect(read).toMatchObject({ exists: true, value: "eu\nus" });
  });

  it.each([
    ["a required field left out", { regions: ["eu"] }, "fields.release", "is required"],
    ["a value not matching the format", { release: ["1.2"], regions: ["eu"] }, "fields.release", "must match"],
    ["the format matched only in part", { release: ["v1.2.3-rc"], regions: ["eu"] }, "fields.release", "must match"],
    ["an option the select does not have", { release: ["v1.0.0"], regions: ["mars"] }, "fields.regions", "mars"],
    [
      "several values for a single select",
      { release: ["v1.0.0"], regions: ["eu"], channel: ["stable", "beta"] },
      "fields.channel",
      "does not allow multiple",
    ],
    ["a key that names no field", { release: ["v1.0.0"], regions: ["eu"], colour: ["red"] }, "fields.colour", "is not"],
  ])("refuses %s with InvalidArgument and changes nothing", async (_label, submitted, field, code) => {
    const { p, build, gate, deploy } = await blockedBuild();
    const err = await failure(
      client.unblockJob({ pipelineId: p.id, number: build.number, jobId: gate, user: ann, fields: values(submitted) }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.message).toContain(field);
    expect(err.message).toContain(code);
    const { build: after } = await client.getBuild({ pipelineId: p.id, number: build.number });
    expect(after?.metaData).toEqual({});
    expect(after?.blocked).toBe(true);
    expect(after?.jobs.find((j) => j.id === gate)?.state).toBe("blocked");
    expect(after?.jobs.find((j) => j.id === deploy)?.state).toBe("waiting");
  });

  it("refuses a second unblock, leaving the first values in place", async () => {
    const { p, build, gate } = await blockedBuild();
    const fields = values({ release: ["v1.0.0"], regions: ["us"] });
    await client.unblockJob({ pipelineId: p.id, number: build.number, jobId: gate, user: ann, fields });
    const err = await failure(
      client.unblockJob({
        pipelineId: p.id,
        number: build.number,
        jobId: gate,
        fields: values({ release: ["v9.9.9"], regions: ["eu"] }),
      }),
    );
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe("This job has already been unblocked");
    const { build: after } = await client.getBuild({ pipelineId: p.id, number: build.number });
    expect(after?.metaData).toMatchObject({ release: "v1.0.0", regions: "us" });
  });

  it("refuses to unblock a job of a build canceled while it was blocked", async () => {
    const { p, build, gate } = await blockedBuild();
    const canceled = await client.cancelBuild({ pipelineId: p.id, number: build.number });
    expect(canceled.build?.state).toBe("canceled");
    const err = await failure(
      client.unblockJob({
        pipelineId: p.id,
        number: build.number,
        jobId: gate,
        fields: values({ release: ["v1.0.0"], regions: ["us"] }),
      }),
    );
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe("Jobs from canceled builds cannot be unblocked");
  });

  it("lets only members of a step's allowed_teams unblock it, read-only ones included, and others nothing", async () => {
    const p = pipelineOf(`steps:
  - block: Release?
    allowed_teams: [release-managers, "0b6a52b4-3c8f-4b83-9a5e-0ad6c1a1f0e7"]
  - command: ./release.sh
    label: release
`);
    const build = await newBuild(client, p);
    const gate = idOf(build, "Release?");
    const ask = (callerTeams: string[], readOnly: boolean) =>
      client.unblockJob({ pipelineId: p.id, number: build.number, jobId: gate, user: ann, callerTeams, readOnly });
    for (const [teams, readOnly] of [
      [[], false],
      [["qa", "11111111-0000-4000-8000-000000000000"], false],
      [["release"], false],
    ] as const) {
      const refused = await failure(ask([...teams], readOnly));
      expect([teams, refused.code]).toEqual([teams, Code.PermissionDenied]);
    }
    const { build: still } = await client.getBuild({ pipelineId: p.id, number: build.number });
    expect(still?.jobs.find((j) => j.id === gate)?.state).toBe("blocked");
    // A read-only member of an allowed team, named by its UUID in another case.
    const { job } = await ask(["qa", "0B6A52B4-3C8F-4B83-9A5E-0AD6C1A1F0E7"], true);
    expect(job).toMatchObject({ id: gate, state: "unblocked", unblockedBy: { id: ann.id } });
  });

  it("refuses a block without allowed_teams to a caller who may only read the pipeline", async () => {
    const { p, build, gate } = await blockedBuild();
    const fields = values({ release: ["v1.0.0"], regions: ["us"] });
    const ask = (readOnly: boolean) =>
      client.unblockJob({ pipelineId: p.id, number: build.number, jobId: gate, user: ann, fields, readOnly });
    expect((await failure(ask(true))).code).toBe(Code.PermissionDenied);
    expect((await ask(false)).job?.state).toBe("unblocked");
  });

  it("refuses command jobs, unknown jobs and jobs of another build", async () => {
    const { p, build } = await blockedBuild();
    const other = await blockedBuild();
    const script = await failure(
      client.unblockJob({ pipelineId: p.id, number: build.number, jobId: idOf(build, "test") }),
    );
    expect([script.code, script.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "Only block and input jobs can be unblocked",
    ]);
    const unknown = await failure(client.unblockJob({ pipelineId: p.id, number: build.number, jobId: randomUUID() }));
    expect(unknown.code).toBe(Code.NotFound);
    const foreign = await failure(client.unblockJob({ pipelineId: p.id, number: build.number, jobId: other.gate }));
    expect(foreign.code).toBe(Code.NotFound);
    const noBuild = await failure(client.unblockJob({ pipelineId: p.id, number: 999, jobId: other.gate }));
    expect(noBuild.code).toBe(Code.NotFound);
  });

  it("keeps the winner's values when two processes unblock the same job at once", async () => {
    // A second builds process over the same database: the per-process lock does not hold across them.
    const one = await openBuildsService(databases.create());
    const two = await openBuildsService(one.db);
    for (let round = 0; round < 5; round++) {
      const p = pipelineOf(DEPLOY);
      const build = await newBuild(one.client, p);
      await run(one.client, idOf(build, "test"));
      const gate = idOf(build, "Deploy?");
      const attempt = (c: Client, release: string) =>
        c.unblockJob({
          pipelineId: p.id,
          number: build.number,
          jobId: gate,
          user: ann,
          fields: values({ release: [release], regions: ["eu"] }),
        });
      const results = await Promise.allSettled([attempt(one.client, "v1.0.0"), attempt(two.client, "v2.0.0")]);
      const won = results.findIndex((r) => r.status === "fulfilled");
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      // The other is refused as a second unblock, not lost to any other failure.
      const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      expect([round, ConnectError.from(lost.reason).code]).toEqual([round, Code.FailedPrecondition]);
      const { build: after } = await one.client.getBuild({ pipelineId: p.id, number: build.number });
      expect([round, after?.metaData.release]).toEqual([round, won === 0 ? "v1.0.0" : "v2.0.0"]);
    }
  });

  it("does not block the build at an input step; its values become meta-data when it is submitted", async () => {
    const p = pipelineOf(`
steps:
  - input: Release notes
    fields:
      - text: Notes
        key: release-notes
  - label: build
    command: make
`);
    const build = await newBuild(client, p);
    const input = idOf(build, "Release notes");
    expect(build.blocked).toBe(false);
    expect(build.jobs.find((j) => j.id === input)?.state).toBe("blocked");
    expect(build.jobs.find((j) => j.name === "build")?.state).toBe("scheduled");
    const passed = await run(client, idOf(build, "build"));
    expect(passed.build).toMatchObject({ state: "running", blocked: false });
    await client.unblockJob({
      pipelineId: p.id,
      number: build.number,
      jobId: input,
      user: ann,
      fields: values({ "release-notes": ["Faster"] }),
    });
    const { build: after } = await client.getBuild({ pipelineId: p.id, number: build.number });
    expect(after?.metaData).toEqual({ "release-notes": "Faster" });
    expect(after?.state).toBe("passed");
  });
});

describe("retries", () => {
  let client: Client;
  beforeAll(async () => {
    ({ client } = await openBuildsService(databases.create()));
  });

  const PIPELINE = `
steps:
  - label: flaky
    key: flaky
    command: ./flaky.sh
  - wait
  - label: after
    command: echo after
`;

  it("retries a failed job by hand: a new attempt takes its place, and include_retried_jobs shows the old one", async () => {
    const p = pipelineOf(PIPELINE);
    const build = await newBuild(client, p);
    const flaky = idOf(build, "flaky");
    const failed = await run(client, flaky, 1);
    expect(failed.build?.state).toBe("failed");
    expect(failed.build?.jobs.find((j) => j.name === "after")?.state).toBe("waiting_failed");

    const { job: attempt } = await client.retryJob({ pipelineId: p.id, number: build.number, jobId: flaky, user: ann });
    expect(attempt).toMatchObject({
      name: "flaky",
      state: "scheduled",
      retried: false,
      retriesCount: 1,
      retryType: "manual",
      retrySource: { jobId: flaky, retryType: "manual" },
    });
    expect(attempt?.id).not.toBe(flaky);
    expect(attempt?.exitStatus).toBeUndefined();

    const shown = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    expect(shown?.state).not.toBe("failed");
    expect(shown?.finishedAt).toBeUndefined();
    expect(shown?.jobs.map((j) => j.id)).not.toContain(flaky);
    expect(shown?.jobs.find((j) => j.name === "after")?.state).toBe("waiting");
    const all = (await client.getBuild({ pipelineId: p.id, number: build.number, includeRetriedJobs: true })).build;
    const old = all?.jobs.find((j) => j.id === flaky);
    expect(old).toMatchObject({
      state: "failed",
      exitStatus: 1,
      retried: true,
      retriedInJobId: attempt?.id,
      retryType: "manual",
      retriedBy: { id: ann.id, email: "ann@example.com" },
    });
    const listed = await client.listBuilds({ organizationIds: [p.organizationId], includeRetriedJobs: true });
    expect(listed.builds[0]?.jobs.map((j) => j.id)).toContain(flaky);
    const listedDefault = await client.listBuilds({ organizationIds: [p.organizationId] });
    expect(listedDefault.builds[0]?.jobs.map((j) => j.id)).not.toContain(flaky);

    await run(client, attempt?.id ?? "", 0);
    const done = await run(client, idOf(shown ?? build, "after"), 0);
    expect(done.build?.state).toBe("passed");
  });

  it("refuses passed jobs, jobs retried already, and steps whose manual retries are off, with Buildkite's reasons", async () => {
    const p = pipelineOf(`
steps:
  - label: fine
    command: "true"
  - label: twice
    command: "false"
  - label: locked
    command: "false"
    retry:
      manual:
        allowed: false
        reason: Deploys are never retried
  - label: again
    command: "true"
    retry:
      manual:
        permit_on_passed: true
`);
    const build = await newBuild(client, p);
    for (const [name, exit] of [
      ["fine", 0],
      ["twice", 1],
      ["locked", 1],
      ["again", 0],
    ] as const)
      await run(client, idOf(build, name), exit);
    const retry = (jobId: string) => client.retryJob({ pipelineId: p.id, number: build.number, jobId });
    const passed = await failure(retry(idOf(build, "fine")));
    expect([passed.code, passed.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "Only failed, timed out or canceled jobs can be retried",
    ]);
    await retry(idOf(build, "twice"));
    const twice = await failure(retry(idOf(build, "twice")));
    expect(twice.rawMessage).toBe("This job has already been retried");
    expect((await failure(retry(idOf(build, "locked")))).rawMessage).toBe("Deploys are never retried");
    const permitted = await retry(idOf(build, "again"));
    expect(permitted.job?.retrySource?.jobId).toBe(idOf(build, "again"));
    expect((await failure(retry(randomUUID()))).code).toBe(Code.NotFound);
  });

  it("retries automatically up to the rule's limit, then lets the build fail", async () => {
    const p = pipelineOf(`
steps:
  - label: flaky
    command: ./flaky.sh
    retry:
      automatic:
        - exit_status: 3
          limit: 2
`);
    const build = await newBuild(client, p);
    let jobId = idOf(build, "flaky");
    const chain = [jobId];
    for (let i = 0; i < 2; i++) {
      const after = await run(client, jobId, 3);
      expect(after.build?.finishedAt).toBeUndefined();
      const next = after.build?.jobs.find((j) => j.name === "flaky" && !j.retried);
      expect(next).toMatchObject({ retriesCount: i + 1, retrySource: { jobId, retryType: "automatic" } });
      jobId = next?.id ?? "";
      chain.push(jobId);
    }
    const last = await run(client, jobId, 3);
    expect(last.build?.state).toBe("failed");
    const all = (await client.getBuild({ pipelineId: p.id, number: build.number, includeRetriedJobs: true })).build;
    expect(all?.jobs.map((j) => [j.id, j.retried, j.retryType])).toEqual([
      [chain[0], true, "automatic"],
      [chain[1], true, "automatic"],
      // The last attempt was made by an automatic retry (Buildkite's retry_type on a retry's attempt).
      [chain[2], false, "automatic"],
    ]);
  });

  it("retries a lost agent's job (exit -1) only under a rule for -1, and a matching exit status passes", async () => {
    const p = pipelineOf(`
steps:
  - label: lost
    command: sleep 600
    retry:
      automatic:
        - exit_status: -1
          limit: 1
  - label: any
    command: sleep 600
    retry:
      automatic:
        - exit_status: "*"
          limit: 2
`);
    const build = await newBuild(client, p);
    const lost = await run(client, idOf(build, "lost"), -1, { signalReason: "agent_lost" });
    const attempt = lost.build?.jobs.find((j) => j.name === "lost" && !j.retried);
    expect(attempt).toMatchObject({ state: "scheduled", retrySource: { jobId: idOf(build, "lost") } });
    const any = await run(client, idOf(build, "any"), -1, { signalReason: "agent_lost" });
    // `*` covers exit statuses 1 to 255; -1 must be listed.
    expect(any.build?.jobs.find((j) => j.name === "any")).toMatchObject({ state: "failed", retried: false });
    const passed = await run(client, attempt?.id ?? "", 0);
    expect(passed.job).toMatchObject({ state: "passed", retriesCount: 1 });
  });

  it("gives an attempt its retry count in its environment; a job of another build has none to read", async () => {
    const p = pipelineOf(PIPELINE);
    const build = await newBuild(client, p);
    const other = await newBuild(client, p);
    const flaky = idOf(build, "flaky");
    await run(client, flaky, 1);
    const { job: attempt } = await client.retryJob({ pipelineId: p.id, number: build.number, jobId: flaky });
    const env = (jobId: string, number = build.number) => client.getJobEnv({ pipelineId: p.id, number, jobId });
    expect((await env(flaky)).env).toMatchObject({ BUILDKITE_JOB_ID: flaky, BUILDKITE_RETRY_COUNT: "0" });
    expect((await env(attempt?.id ?? "")).env).toMatchObject({
      BUILDKITE_JOB_ID: attempt?.id,
      BUILDKITE_RETRY_COUNT: "1",
      BUILDKITE_BUILD_NUMBER: String(build.number),
    });
    expect((await failure(env(flaky, other.number))).code).toBe(Code.NotFound);
    expect((await failure(env(randomUUID()))).code).toBe(Code.NotFound);
  });

  it("makes one new attempt when two processes retry the same job at once", async () => {
    const one = await openBuildsService(databases.create());
    const two = await openBuildsService(one.db);
    for (let round = 0; round < 5; round++) {
      const p = pipelineOf(PIPELINE);
      const build = await newBuild(one.client, p);
      const flaky = idOf(build, "flaky");
      await run(one.client, flaky, 1);
      const attempt = (c: Client) => c.retryJob({ pipelineId: p.id, number: build.number, jobId: flaky, user: ann });
      const results = await Promise.allSettled([attempt(one.client), attempt(two.client)]);
      const shown = (await one.client.getBuild({ pipelineId: p.id, number: build.number })).build;
      // One retry is made, the other refused as a second retry; the build shows one live attempt of the step.
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect({
        round,
        retried: results.filter((r) => r.status === "fulfilled").length,
        refusedAs: refused.map((r) => ConnectError.from(r.reason).code),
        liveAttempts: shown?.jobs.filter((j) => j.name === "flaky").length,
      }).toEqual({ round, retried: 1, refusedAs: [Code.FailedPrecondition], liveAttempts: 1 });
    }
  });

  it("reopens a canceled build when one of its jobs is retried: no longer canceled or finished, and it resumes", async () => {
    const p = pipelineOf(PIPELINE);
    const build = await newBuild(client, p);
    const flaky = idOf(build, "flaky");
    await start(client, flaky);
    await client.cancelBuild({ pipelineId: p.id, number: build.number });
    const canceled = await client.transitionJob({ jobId: flaky, event: JobEventType.CANCELED });
    expect(canceled.build?.state).toBe("canceled");
    const { job } = await client.retryJob({ pipelineId: p.id, number: build.number, jobId: flaky, user: ann });
    expect(job?.state).toBe("scheduled");
    const after = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    expect(after?.state).not.toBe("canceled");
    expect(after?.cancelReason ?? "").toBe("");
    expect(after?.finishedAt).toBeUndefined();
    const passed = await run(client, job?.id ?? "");
    expect(passed.job?.state).toBe("passed");
    // The steps the cancel stopped before they started run again, and the build can pass.
    const behind = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    const afterJob = behind?.jobs.find((j) => j.name === "after");
    expect(afterJob?.state).toBe("scheduled");
    await run(client, afterJob?.id ?? "");
    expect((await client.getBuild({ pipelineId: p.id, number: build.number })).build?.state).toBe("passed");
  });
});

describe("the server's clocks on jobs", () => {
  const T0 = Date.parse("2032-01-10T09:00:00Z");
  const SWEEPS: SweepSettings = { scheduledExpiryMs: 3600_000, timeoutGraceMs: 30_000 };

  /** A service whose clock the test moves, over its own database. */
  async function clocked() {
    let clock = T0;
    const served = await openBuildsService(databases.create(), { now: () => new Date(clock), sweeps: SWEEPS });
    return { ...served, set: (ms: number) => (clock = T0 + ms) };
  }

  const TIMEOUT = "steps:\n  - label: slow\n    command: sleep 600\n    timeout_in_minutes: 1\n";

  it("times a running job out at its deadline; the agent's finish then ends it timed_out and the build fails", async () => {
    const { client, parts, set } = await clocked();
    const p = pipelineOf(TIMEOUT);
    const build = await newBuild(client, p);
    const slow = idOf(build, "slow");
    await start(client, slow);
    set(59_000);
    expect(await parts.duties.sweepJobs()).toEqual({ timingOut: 0, timedOut: 0, expired: 0 });
    expect((await client.getJob({ jobId: slow })).job?.state).toBe("running");
    set(61_000);
    expect(await parts.duties.sweepJobs()).toEqual({ timingOut: 1, timedOut: 0, expired: 0 });
    expect((await client.getJob({ jobId: slow })).job?.state).toBe("timing_out");
    // The agent stops the process and reports how it ended: whatever the status, the job timed out.
    set(63_000);
    const done = await client.transitionJob({ jobId: slow, event: JobEventType.FINISH, exitStatus: 0 });
    expect(done.job).toMatchObject({ state: "timed_out", exitStatus: 0 });
    expect(done.build?.state).toBe("failed");
    set(200_000);
    expect(await parts.duties.sweepJobs()).toEqual({ timingOut: 0, timedOut: 0, expired: 0 });
  });

  it("ends a timing-out job its agent never stopped as timed_out once the grace has passed", async () => {
    const { client, parts, set } = await clocked();
    const p = pipelineOf(TIMEOUT);
    const build = await newBuild(client, p);
    const slow = idOf(build, "slow");
    await start(client, slow);
    set(61_000);
    await parts.duties.sweepJobs();
    set(60_000 + SWEEPS.timeoutGraceMs - 1000);
    expect((await parts.duties.sweepJobs()).timedOut).toBe(0);
    set(60_000 + SWEEPS.timeoutGraceMs + 1000);
    expect((await parts.duties.sweepJobs()).timedOut).toBe(1);
    const after = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    expect(after?.jobs[0]?.state).toBe("timed_out");
    expect(after?.state).toBe("failed");
    expect(after?.finishedAt && timestampDate(after.finishedAt).getTime()).toBe(
      T0 + 60_000 + SWEEPS.timeoutGraceMs + 1000,
    );
  });

  it("bounds a step's timeout by the pipeline's maximum, and gives steps without one the pipeline's default", async () => {
    const { client, parts, set } = await clocked();
    const p = pipelineOf(
      "steps:\n  - label: long\n    command: x\n    timeout_in_minutes: 30\n  - label: plain\n    command: x\n",
      { defaultCommandStepTimeout: 2, maximumCommandStepTimeout: 3 },
    );
    const build = await newBuild(client, p);
    await start(client, idOf(build, "long"));
    await start(client, idOf(build, "plain"));
    set(2 * 60_000 + 1000);
    expect((await parts.duties.sweepJobs()).timingOut).toBe(1);
    expect((await client.getJob({ jobId: idOf(build, "plain") })).job?.state).toBe("timing_out");
    set(3 * 60_000 + 1000);
    expect((await parts.duties.sweepJobs()).timingOut).toBe(1);
    expect((await client.getJob({ jobId: idOf(build, "long") })).job?.state).toBe("timing_out");
  });

  it("expires command jobs no agent took in time, not blocks or jobs an agent holds", async () => {
    const { client, parts, set } = await clocked();
    const p = pipelineOf(`
steps:
  - label: nobody
    command: x
  - label: taken
    command: x
  - block: Later
    depends_on: ~
`);
    const build = await newBuild(client, p);
    await client.transitionJob({
      jobId: idOf(build, "taken"),
      event: JobEventType.ASSIGN,
      agent: { id: "agent-1", name: "box" },
    });
    set(SWEEPS.scheduledExpiryMs - 1000);
    expect((await parts.duties.sweepJobs()).expired).toBe(0);
    // Expiry is looked at once a minute at most (it reads every queued job): not yet 2 s later…
    set(SWEEPS.scheduledExpiryMs + 1000);
    expect((await parts.duties.sweepJobs()).expired).toBe(0);
    // …but a minute after the last look.
    set(SWEEPS.scheduledExpiryMs + 59_000);
    expect((await parts.duties.sweepJobs()).expired).toBe(1);
    const after = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    const state = (name: string) => after?.jobs.find((j) => j.name === name)?.state;
    // The expiry fails the build, so the block can no longer be unblocked (blocked_failed), but it did not expire.
    expect([state("nobody"), state("taken"), state("Later")]).toEqual(["expired", "assigned", "blocked_failed"]);
    expect(after).toMatchObject({ state: "failing", blocked: false });
    // A later look finds nothing more to do.
    set(SWEEPS.scheduledExpiryMs + 180_000);
    expect((await parts.duties.sweepJobs()).expired).toBe(0);
    const taken = idOf(build, "taken");
    await client.transitionJob({ jobId: taken, event: JobEventType.ACCEPT, agentId: "agent-1" });
    await client.transitionJob({ jobId: taken, event: JobEventType.START });
    await client.transitionJob({ jobId: taken, event: JobEventType.FINISH, exitStatus: 0 });
    const final = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    expect(final?.jobs.find((j) => j.name === "taken")?.state).toBe("passed");
    expect(final?.state).toBe("failed");
  });
});
