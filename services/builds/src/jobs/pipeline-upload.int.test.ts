import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType, PipelineUploadState } from "@conveyor/proto/builds";
import { fieldErrorsOf } from "@conveyor/runtime";
import type { Db } from "mongodb";
import {
  type BuildsClient as Client,
  openBuildsService,
  type RepositoryWraps,
  testDatabases,
} from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";

// `buildkite-agent pipeline upload` through the builds service over the real MongoDB-wire server: where the new
// steps go and what waits for them, replace, the uuid's dedupe, replays of a stored plan after a crash, the limits
// and the refusals.
const databases = testDatabases("it_upload");

beforeAll(() => databases.connect());
afterAll(() => databases.close());

/** A builds service over a new database; `wrap` may replace repository methods (to simulate crashes). */
function openService(
  wrap: RepositoryWraps & {
    /** Another process over the same database. */
    db?: Db;
  } = {},
) {
  const { db = databases.create(), ...repositories } = wrap;
  return openBuildsService(db, { wrap: repositories });
}

const pipelineOf = pipelineFromYaml;

const BASE = `
steps:
  - label: gen
    key: gen
    command: ./generate.sh
  - wait
  - label: final
    command: ./final.sh
`;

async function start(client: Client, jobId: string) {
  await client.transitionJob({ jobId, event: JobEventType.ASSIGN, agent: { id: "agent-1", name: "box" } });
  await client.transitionJob({ jobId, event: JobEventType.ACCEPT, agentId: "agent-1" });
  await client.transitionJob({ jobId, event: JobEventType.START });
}

async function finish(client: Client, jobId: string, exitStatus = 0) {
  return client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus });
}

async function run(client: Client, jobId: string, exitStatus = 0) {
  await start(client, jobId);
  return finish(client, jobId, exitStatus);
}

/** A build of `yaml` whose `gen` job is running, ready to upload. */
async function uploading(client: Client, yaml = BASE) {
  const p = pipelineOf(yaml);
  const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main", organizationSlug: "acme" });
  if (!build) throw new Error("no build");
  const gen = build.jobs.find((j) => j.name === "gen")?.id ?? "";
  await start(client, gen);
  const jobs = async () => (await client.getBuild({ pipelineId: p.id, number: build.number })).build?.jobs ?? [];
  const byName = async (name: string) => {
    const found = (await jobs()).find((j) => j.name === name);
    if (!found) throw new Error(`no job ${name}`);
    return found;
  };
  return { p, build, gen, jobs, byName };
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call succeeded");
}

const TWO = "steps:\n  - label: a\n    command: echo a\n  - label: b\n    command: echo b\n";

describe("pipeline upload", () => {
  let client: Client;
  beforeAll(async () => {
    ({ client } = await openService());
  });

  it("inserts the steps after the uploader, runs them, and holds what waited for the uploader until they finish", async () => {
    const { gen, jobs, byName } = await uploading(client);
    const res = await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid: randomUUID() });
    expect(res.jobsAdded).toBe(2);
    const after = await jobs();
    expect(after.map((j) => j.name || j.type)).toEqual(["gen", "a", "b", "waiter", "final"]);
    const positions = after.map((j) => j.stepPosition);
    expect([...positions].sort((x, y) => x - y)).toEqual(positions);
    expect(new Set(positions).size).toBe(5);
    // Steps without a wait of their own run beside the uploader.
    expect(after.map((j) => j.state)).toEqual(["running", "scheduled", "scheduled", "waiting", "waiting"]);
    const waiter = after[3];
    expect(waiter?.dependsOn).toEqual(expect.arrayContaining([gen, after[1]?.id, after[2]?.id]));

    await finish(client, gen);
    expect((await byName("final")).state).toBe("waiting");
    await run(client, (await byName("a")).id);
    expect((await byName("final")).state).toBe("waiting");
    await run(client, (await byName("b")).id);
    expect((await byName("final")).state).toBe("scheduled");
    const done = await run(client, (await byName("final")).id);
    expect(done.build?.state).toBe("passed");
  });

  it("makes an uploaded wait step wait for the uploader, as a wait waits for every step before it", async () => {
    const { gen, byName } = await uploading(client);
    await client.uploadPipeline({
      jobId: gen,
      pipeline: "steps:\n  - wait\n  - label: y\n    command: echo y\n",
      uuid: randomUUID(),
    });
    expect((await byName("y")).state).not.toBe("scheduled");
    await finish(client, gen);
    expect((await byName("y")).state).toBe("scheduled");
  });

  it("resolves depends_on against the build's keys, and gives the upload's env to its command steps", async () => {
    const { gen, byName } = await uploading(client);
    await client.uploadPipeline({
      jobId: gen,
      pipeline: `
env:
  SHARED: from-upload
  OWN: from-upload
steps:
  - label: z
    command: echo z
    depends_on: gen
    env:
      OWN: from-step
`,
      uuid: randomUUID(),
    });
    const z = await byName("z");
    expect(z.state).toBe("waiting");
    expect(z.dependsOn).toEqual([gen]);
    expect(z.env).toMatchObject({ SHARED: "from-upload", OWN: "from-step" });
    await finish(client, gen);
    expect((await byName("z")).state).toBe("scheduled");
  });

  it("with replace, drops the steps that have not started and keeps those that have", async () => {
    const { p, build, gen, jobs, byName } = await uploading(
      client,
      `
steps:
  - label: gen
    command: ./generate.sh
  - label: other
    command: ./other.sh
  - wait
  - label: final
    command: ./final.sh
  - block: Release?
`,
    );
    await start(client, (await byName("other")).id);
    await client.uploadPipeline({
      jobId: gen,
      pipeline: "steps:\n  - label: replacement\n    command: echo new\n",
      uuid: randomUUID(),
      replace: true,
    });
    expect((await jobs()).map((j) => j.name)).toEqual(["gen", "replacement", "other"]);
    await finish(client, gen);
    await finish(client, (await byName("other")).id);
    await run(client, (await byName("replacement")).id);
    const done = (await client.getBuild({ pipelineId: p.id, number: build.number })).build;
    expect(done?.state).toBe("passed");
  });

  it("adds an upload once for one uuid, whatever is sent again with it", async () => {
    const { gen, jobs } = await uploading(client);
    const uuid = randomUUID();
    expect((await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid })).jobsAdded).toBe(2);
    const again = await client.uploadPipeline({
      jobId: gen,
      pipeline: "steps:\n  - label: c\n    command: c\n",
      uuid,
    });
    expect(again.jobsAdded).toBe(2);
    expect((await jobs()).map((j) => j.name)).toEqual(["gen", "a", "b", "", "final"]);
    // After the uploader finished, the same uuid still answers the same and changes nothing.
    await finish(client, gen);
    expect((await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid })).jobsAdded).toBe(2);
    expect(await jobs()).toHaveLength(5);
  });

  it("refuses an uploader that is not running, a canceled build, an unknown job and an empty uuid", async () => {
    const { p, build, gen, byName } = await uploading(client);
    const final = await byName("final");
    const waiting = await failure(client.uploadPipeline({ jobId: final.id, pipeline: TWO, uuid: randomUUID() }));
    expect([waiting.code, waiting.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "Only a running job can upload steps",
    ]);
    // Canceling the build puts the uploader in canceling: it is no longer a running job.
    await client.cancelBuild({ pipelineId: p.id, number: build.number });
    const canceled = await failure(client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid: randomUUID() }));
    expect([canceled.code, canceled.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "Only a running job can upload steps",
    ]);
    expect((await byName("final")).state).toBe("canceled");
    expect((await failure(client.uploadPipeline({ jobId: randomUUID(), pipeline: TWO, uuid: "u" }))).code).toBe(
      Code.NotFound,
    );
    const noUuid = await failure(client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid: "" }));
    expect(fieldErrorsOf(noUuid)).toEqual([{ field: "uuid", code: "must be 1 to 64 characters" }]);
  });

  it("refuses a pipeline that does not parse with every problem, and adds nothing", async () => {
    const { gen, jobs } = await uploading(client);
    const bad = await failure(
      client.uploadPipeline({
        jobId: gen,
        pipeline: "steps:\n  - label: no command\n    commandd: x\n  - frobnicate: yes\n",
        uuid: randomUUID(),
      }),
    );
    expect(bad.code).toBe(Code.InvalidArgument);
    const errors = fieldErrorsOf(bad);
    expect(errors.length).toBeGreaterThanOrEqual(2);
    for (const e of errors) expect(e.field).toMatch(/^pipeline/);
    expect(errors.map((e) => e.field).join(" ")).toMatch(/steps.*0/);
    expect(errors.map((e) => e.field).join(" ")).toMatch(/steps.*1/);
    const yaml = await failure(client.uploadPipeline({ jobId: gen, pipeline: "steps: [", uuid: randomUUID() }));
    expect(yaml.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(yaml).length).toBeGreaterThan(0);
    expect(await jobs()).toHaveLength(3);
  });

  it("refuses uploads over 1 MiB, over 500 steps or over 2000 jobs, and adds nothing", async () => {
    const { gen, jobs } = await uploading(client);
    const big = `steps:\n  - label: big\n    command: echo ${"x".repeat(1024 * 1024)}\n`;
    const tooBig = await failure(client.uploadPipeline({ jobId: gen, pipeline: big, uuid: randomUUID() }));
    expect(fieldErrorsOf(tooBig)).toEqual([{ field: "pipeline", code: "is too large (maximum is 1048576 bytes)" }]);
    const steps = `steps:\n${Array.from({ length: 501 }, (_, i) => `  - command: echo ${i}\n`).join("")}`;
    const many = await failure(client.uploadPipeline({ jobId: gen, pipeline: steps, uuid: randomUUID() }));
    expect(fieldErrorsOf(many)).toEqual([
      { field: "pipeline", code: "An upload may add at most 500 steps; this one has 501" },
    ]);
    // No step may ask for more than 500 jobs, so five of 500 make 2500.
    const wide = `steps:\n${"  - command: echo wide\n    parallelism: 500\n".repeat(5)}`;
    const jobsErr = await failure(client.uploadPipeline({ jobId: gen, pipeline: wide, uuid: randomUUID() }));
    expect(fieldErrorsOf(jobsErr)).toEqual([
      { field: "pipeline", code: "An upload may add at most 2000 jobs; this one makes 2500" },
    ]);
    expect(await jobs()).toHaveLength(3);
  });

  it("refuses an upload that would take the build past 4000 jobs", async () => {
    const { gen, jobs } = await uploading(client);
    // Jobs of omitted steps count too, and cost the least to store (nothing schedules them).
    const wide = `steps:\n${"  - command: echo wide\n    parallelism: 500\n    branches: never\n".repeat(4)}`;
    await client.uploadPipeline({ jobId: gen, pipeline: wide, uuid: randomUUID() });
    const over = await failure(client.uploadPipeline({ jobId: gen, pipeline: wide, uuid: randomUUID() }));
    expect(fieldErrorsOf(over)).toEqual([
      { field: "pipeline", code: "A build may hold at most 4000 jobs; this upload would make 4003" },
    ]);
    expect(await jobs()).toHaveLength(2003);
  }, 120_000);
});

describe("pipeline upload in two processes", () => {
  it("adds an upload sent to two processes at once only once", async () => {
    const one = await openService();
    const two = await openService({ db: one.db });
    for (let round = 0; round < 5; round++) {
      const { gen, jobs } = await uploading(one.client);
      const uuid = randomUUID();
      const send = (c: Client) => c.uploadPipeline({ jobId: gen, pipeline: TWO, uuid });
      const results = await Promise.allSettled([send(one.client), send(two.client)]);
      // The agent retries an upload that failed with the same uuid: it must end applied, once.
      expect((await send(two.client)).jobsAdded).toBe(2);
      expect({ round, answered: results.some((r) => r.status === "fulfilled"), jobs: (await jobs()).length }).toEqual({
        round,
        answered: true,
        jobs: 5,
      });
    }
  });
});

describe("pipeline upload after a crash", () => {
  it("applies the stored plan when the agent retries an upload whose plan was stored before the crash", async () => {
    let crash = true;
    const { client } = await openService({
      uploads: (uploads) => ({
        ...uploads,
        async insert(record) {
          const stored = await uploads.insert(record);
          if (crash) {
            crash = false;
            throw new Error("the process died after storing the plan");
          }
          return stored;
        },
      }),
    });
    const { gen, jobs, byName } = await uploading(client);
    const uuid = randomUUID();
    expect((await failure(client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid }))).code).toBe(Code.Internal);
    expect(await jobs()).toHaveLength(3);
    // The retry applies what was planned, not what it carries.
    const replay = await client.uploadPipeline({ jobId: gen, pipeline: "steps: [", uuid });
    expect(replay.jobsAdded).toBe(2);
    expect((await jobs()).map((j) => j.name)).toEqual(["gen", "a", "b", "", "final"]);
    await finish(client, gen);
    await run(client, (await byName("a")).id);
    expect((await byName("final")).state).toBe("waiting");
  });

  it("completes an upload that died half applied, without adding its jobs twice", async () => {
    let crash = true;
    const { client } = await openService({
      repo: (repo) => ({
        ...repo,
        async addDependencies(id, dependsOn) {
          if (crash) {
            crash = false;
            throw new Error("the process died between inserting the jobs and linking them");
          }
          return repo.addDependencies(id, dependsOn);
        },
      }),
    });
    const { gen, jobs, byName } = await uploading(client);
    const uuid = randomUUID();
    await failure(client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid }));
    const half = await jobs();
    expect(half.map((j) => j.name)).toEqual(["gen", "a", "b", "", "final"]);
    expect(half[3]?.dependsOn).toEqual([gen]);
    expect((await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid })).jobsAdded).toBe(2);
    const whole = await jobs();
    expect(whole.map((j) => j.id)).toEqual(half.map((j) => j.id));
    expect(whole[3]?.dependsOn).toEqual(expect.arrayContaining([gen, whole[1]?.id, whole[2]?.id]));
    await finish(client, gen);
    await run(client, (await byName("a")).id);
    expect((await byName("final")).state).toBe("waiting");
    await run(client, (await byName("b")).id);
    expect((await byName("final")).state).toBe("scheduled");
  });
});

describe("asynchronous pipeline upload (the agent's ?async=true)", () => {
  /** Polls the upload's status until it is applied or rejected, as the agent does. */
  async function settled(client: Client, jobId: string, uuid: string) {
    for (let i = 0; i < 200; i++) {
      const { status } = await client.getPipelineUpload({ jobId, uuid });
      if (status?.state === PipelineUploadState.APPLIED || status?.state === PipelineUploadState.REJECTED)
        return status;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error("the upload never settled");
  }

  it("answers before the upload is applied, then applies it once, whatever is sent again", async () => {
    const { client } = await openService();
    const { gen, jobs } = await uploading(client);
    const uuid = randomUUID();
    const accepted = await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid, asynchronous: true });
    expect([PipelineUploadState.PENDING, PipelineUploadState.PROCESSING, PipelineUploadState.APPLIED]).toContain(
      accepted.status?.state,
    );
    const status = await settled(client, gen, uuid);
    expect(status).toMatchObject({ state: PipelineUploadState.APPLIED, jobsAdded: 2, message: "" });
    // The agent retrying the post, and a synchronous upload of the same uuid, change nothing.
    await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid, asynchronous: true });
    expect((await client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid })).jobsAdded).toBe(2);
    expect((await jobs()).map((j) => j.name || j.type)).toEqual(["gen", "a", "b", "waiter", "final"]);
  });

  it("rejects a pipeline that cannot be used when it is planned, with the message the 422 would have had", async () => {
    const { client } = await openService();
    const { gen, jobs } = await uploading(client);
    const uuid = randomUUID();
    await client.uploadPipeline({
      jobId: gen,
      pipeline: "steps:\n  - command: x\n    nonsense: 1\n",
      uuid,
      asynchronous: true,
    });
    const status = await settled(client, gen, uuid);
    expect(status.state).toBe(PipelineUploadState.REJECTED);
    expect(status.message).toMatch(/^The pipeline could not be uploaded: pipeline\.steps\[0\].*nonsense/);
    expect((await jobs()).map((j) => j.name || j.type)).toEqual(["gen", "waiter", "final"]);
    // Sent again synchronously, the same uuid is refused the same way.
    const again = await failure(client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid }));
    expect(again.code).toBe(Code.FailedPrecondition);
    expect(again.rawMessage).toBe(status.message);
  });

  it("still refuses at once what is wrong before the build is read: a job that does not run, a uuid, the size", async () => {
    const { client } = await openService();
    const { gen } = await uploading(client);
    await finish(client, gen);
    const stopped = await failure(
      client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid: randomUUID(), asynchronous: true }),
    );
    expect(stopped.code).toBe(Code.FailedPrecondition);
    const uuid = await failure(client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid: "", asynchronous: true }));
    expect(fieldErrorsOf(uuid).map((e) => e.field)).toEqual(["uuid"]);
    const unknown = await failure(client.getPipelineUpload({ jobId: gen, uuid: randomUUID() }));
    expect(unknown.code).toBe(Code.NotFound);
  });

  /**
   * An upload stored by a process that died before planning it: that process never gets further (its background work
   * may still be running while the test goes on, so it must keep failing, not start working again).
   */
  async function leftPending() {
    const first = await openService({
      uploads: (u) => ({
        ...u,
        markPlanned: async () => {
          throw new Error("killed");
        },
      }),
    });
    const { gen, jobs } = await uploading(first.client);
    const uuid = randomUUID();
    await first.client.uploadPipeline({ jobId: gen, pipeline: TWO, uuid, asynchronous: true });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await first.client.getPipelineUpload({ jobId: gen, uuid })).status?.state).toBe(
      PipelineUploadState.PENDING,
    );
    return { db: first.db, gen, jobs, uuid };
  }

  it("completes an upload a crash left pending by the sweep, with nobody polling", async () => {
    const { db, gen, jobs, uuid } = await leftPending();
    const other = await openService({ db });
    // Not before it is 30 s old (the process that took it may still be at it).
    expect(await other.parts.upload.completeUnfinished()).toBe(0);
    expect(await other.parts.upload.completeUnfinished(0)).toBe(1);
    expect((await other.client.getPipelineUpload({ jobId: gen, uuid })).status).toMatchObject({
      state: PipelineUploadState.APPLIED,
      jobsAdded: 2,
    });
    expect((await jobs()).map((j) => j.name || j.type)).toEqual(["gen", "a", "b", "waiter", "final"]);
    expect(await other.parts.upload.completeUnfinished(0)).toBe(0);
  });

  it("plans an upload a crash left pending only once when two processes take it up at once", async () => {
    const { db, gen, jobs, uuid } = await leftPending();
    const second = await openService({ db });
    const third = await openService({ db });
    await Promise.all([second.parts.upload.completeUnfinished(0), settled(third.client, gen, uuid)]);
    expect((await settled(second.client, gen, uuid)).jobsAdded).toBe(2);
    expect((await jobs()).map((j) => j.name || j.type)).toEqual(["gen", "a", "b", "waiter", "final"]);
  });
});
