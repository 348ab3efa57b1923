import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CreateBuildRequestSchema } from "@conveyor/proto/builds";
import { createLogger, type EventPublisher } from "@conveyor/runtime";
import { type Db, MongoClient } from "mongodb";
import { createBuildsContext, createBuildsParts } from "../builds-context.js";
import { createBuildsService } from "../builds-service.js";
import type { BuildCancel } from "../lifecycle/build-cancel.js";
import { type BuildRepository, createMongoBuildRepository } from "../store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "../store/concurrency-slot-repository.js";
import { createMongoJobLogRepository } from "../store/job-log-repository.js";
import { createMongoPipelineUploadRepository } from "../store/pipeline-upload-repository.js";
import { pipelineFromYaml } from "../test-pipelines.js";
import { aJob } from "../test-support.js";
import { createBuildCreation, type NewBuild } from "./build-creation.js";
import { CLAIM_GRACE_MS } from "./creation-claims.js";

// A creation cut off before its build was stored (claim, jobs, build: build-creation.ts), as a process killed there
// or a database lost there leaves it, is cleared once the grace has passed.
let mongo: MongoClient;
let db: Db;
let repo: BuildRepository;
const published: string[] = [];
const events: EventPublisher = {
  async publish(subject) {
    published.push(subject);
  },
};
let clock = new Date();

/** What the builds service runs on here: the test database, the recording publisher and the test's clock. */
async function deps() {
  return {
    repo,
    logs: await createMongoJobLogRepository(db),
    uploads: await createMongoPipelineUploadRepository(db),
    slots: await createMongoConcurrencySlotRepository(db),
    events,
    logger: createLogger("test", "silent"),
    now: () => clock,
  };
}

/** The builds service's parts over deps(), and its Connect service. */
async function serve() {
  const parts = createBuildsParts(await deps());
  return { parts, service: createBuildsService(parts) };
}

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(`it_creation_repair_${Date.now()}`);
  repo = await createMongoBuildRepository(db);
});
afterAll(async () => {
  await db.dropDatabase();
  await mongo.close();
});

/** A creation claimed with `stored` jobs and no build, at `createdAt`, as one cut off before its build leaves it. */
async function claimedOnly(stored: number, createdAt: Date) {
  const buildId = randomUUID();
  const pipelineId = randomUUID();
  const jobs = Array.from({ length: stored }, (_, i) =>
    aJob({ id: randomUUID(), buildId, pipelineId, buildNumber: 1, stepPosition: i, createdAt, runnableAt: createdAt }),
  );
  await repo.insertClaim({ buildId, pipelineId, jobIds: [...jobs.map((j) => j.id), randomUUID()], createdAt });
  await repo.insertJobs(jobs);
  return { buildId, pipelineId, jobs };
}

describe("creations claimed and cut off before their build was stored", () => {
  it("keep their jobs within the grace, unassignable, then lose them with their claim", async () => {
    clock = new Date();
    const cut = await claimedOnly(2, clock);
    const { parts, service } = await serve();
    await parts.duties.sweepJobs();
    expect(await repo.jobsOf([cut.buildId])).toHaveLength(2);
    // No agent is given a job of a build not stored.
    const jobId = cut.jobs[0]?.id ?? "";
    const refused = await Promise.resolve()
      .then(() => service.assignJob({ jobId, agent: { id: "agent-1", name: "agent-1" } } as never, {} as never))
      .catch((err: unknown) => ConnectError.from(err));
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((await repo.findJob(jobId))?.state).toBe("scheduled");

    clock = new Date(clock.getTime() + CLAIM_GRACE_MS + 1_000);
    await parts.duties.sweepJobs();
    expect(await repo.jobsOf([cut.buildId])).toEqual([]);
    expect(await repo.findClaim(cut.buildId)).toBeNull();
    expect(await repo.findBuildById(cut.buildId)).toBeNull();
  });

  it("lose only their claim when their build stands, and a create leaves no claim behind", async () => {
    clock = new Date();
    const { parts, service } = await serve();
    const pipeline = pipelineFromYaml("steps:\n  - command: a\n  - command: b\n");
    const { build } = await service.createBuild(
      create(CreateBuildRequestSchema, { pipeline, commit: "abc", branch: "main" }),
      {} as never,
    );
    const id = build?.id ?? "";
    // The claim's removal is not waited for: it is gone soon after.
    for (let i = 0; i < 50 && (await repo.findClaim(id)); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await repo.findClaim(id)).toBeNull();

    // A claim whose removal was lost: the repair removes it and leaves the build and its jobs alone.
    await repo.insertClaim({
      buildId: id,
      pipelineId: pipeline.id,
      jobIds: (build?.jobs ?? []).map((j) => j.id ?? ""),
      createdAt: clock,
    });
    clock = new Date(clock.getTime() + CLAIM_GRACE_MS + 1_000);
    await parts.duties.sweepJobs();
    expect(await repo.findClaim(id)).toBeNull();
    expect((await repo.findBuildById(id))?.state).toBe("scheduled");
    expect(await repo.jobsOf([id])).toHaveLength(2);
  });

  it("refuse a second creation of the same build within the grace, and clear the first's jobs after it", async () => {
    // A trigger's child build has an id derived from its trigger job: a repeated attempt claims the same id.
    clock = new Date();
    const cut = await claimedOnly(1, clock);
    const ctx = createBuildsContext(await deps());
    const creation = createBuildCreation(ctx, {} as BuildCancel);
    const pipeline = pipelineFromYaml("steps:\n  - command: a\n  - command: b\n", { id: cut.pipelineId });
    const input: NewBuild = {
      pipeline,
      organizationSlug: "acme",
      creator: null,
      commit: "abc",
      branch: "main",
      message: "again",
      author: null,
      cleanCheckout: false,
      env: {},
      metaData: {},
      pullRequest: null,
      source: "trigger_job",
      rebuiltFrom: null,
      id: cut.buildId,
    };
    const within = await creation.create(input).catch((err: unknown) => ConnectError.from(err));
    expect((within as ConnectError).code).toBe(Code.Unavailable);
    expect(await repo.jobsOf([cut.buildId])).toHaveLength(1);

    clock = new Date(clock.getTime() + CLAIM_GRACE_MS + 1_000);
    const { build, jobs } = await creation.create(input);
    expect(build.id).toBe(cut.buildId);
    // The cut-off attempt's job is gone; the build has only its own.
    expect((await repo.jobsOf([cut.buildId])).map((j) => j.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    expect((await repo.findBuildById(cut.buildId))?.state).toBe("scheduled");
  });
});
