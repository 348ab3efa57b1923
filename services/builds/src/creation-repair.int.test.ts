import { randomUUID } from "node:crypto";
import { createLogger, type EventPublisher } from "@conveyor/runtime";
import { type Db, MongoClient } from "mongodb";
import { type BuildRepository, createMongoBuildRepository } from "./build-repository.js";
import { createBuildDomain } from "./build-service.js";
import { createMongoConcurrencySlotRepository } from "./concurrency-slot-repository.js";
import { CREATING_GRACE_MS } from "./creation-repair.js";
import { createMongoJobLogRepository } from "./job-log-repository.js";
import { createMongoPipelineUploadRepository } from "./pipeline-upload-repository.js";
import { aBuild, aJob } from "./test-support.js";

// A creation cut off between storing the build (`creating`) and giving it its first state, as a process killed
// there or a database lost there leaves it: the job sweep completes or cancels it once the grace has passed.
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

async function domain() {
  return createBuildDomain({
    repo,
    logs: await createMongoJobLogRepository(db),
    uploads: await createMongoPipelineUploadRepository(db),
    slots: await createMongoConcurrencySlotRepository(db),
    events,
    logger: createLogger("test", "silent"),
    now: () => clock,
  });
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

/** A build left `creating` at `createdAt`, with `stored` of its `planned` jobs stored. */
async function cutOff(planned: number | undefined, stored: number, createdAt: Date) {
  const pipelineId = randomUUID();
  const build = aBuild({
    id: randomUUID(),
    pipelineId,
    number: 1,
    state: "creating",
    createdAt,
    scheduledAt: createdAt,
    ...(planned === undefined ? {} : { plannedJobs: planned }),
  });
  await repo.insertBuild(build);
  const jobs = Array.from({ length: stored }, (_, i) =>
    aJob({
      id: randomUUID(),
      buildId: build.id,
      pipelineId,
      buildNumber: 1,
      stepIndex: i,
      createdAt,
      scheduledAt: createdAt,
      runnableAt: createdAt,
    }),
  );
  await repo.insertJobs(jobs);
  return build;
}

describe("builds whose creation was cut off", () => {
  it("are left alone within the grace, then completed from their jobs when every planned job was stored", async () => {
    clock = new Date();
    const build = await cutOff(2, 2, clock);
    const service = await domain();
    await service.sweepJobs();
    expect((await repo.findBuildById(build.id))?.state).toBe("creating");

    clock = new Date(clock.getTime() + CREATING_GRACE_MS + 1_000);
    published.length = 0;
    await service.sweepJobs();
    const repaired = await repo.findBuildById(build.id);
    expect(repaired?.state).toBe("scheduled");
    expect(published).toContain("ci.builds.build_created");
    expect((await repo.jobsOf([build.id])).map((j) => j.state)).toEqual(["scheduled", "scheduled"]);
  });

  it("are canceled with the jobs they have when jobs are missing, and end not_run with none", async () => {
    clock = new Date();
    const partial = await cutOff(3, 1, clock);
    const empty = await cutOff(2, 0, clock);
    const unknown = await cutOff(undefined, 1, clock);
    clock = new Date(clock.getTime() + CREATING_GRACE_MS + 1_000);
    await (await domain()).sweepJobs();
    expect((await repo.findBuildById(partial.id))?.state).toBe("canceled");
    expect((await repo.jobsOf([partial.id])).map((j) => j.state)).toEqual(["canceled"]);
    expect((await repo.findBuildById(empty.id))?.state).toBe("not_run");
    expect((await repo.findBuildById(unknown.id))?.state).toBe("canceled");
    // Nothing is left creating, and a second pass changes nothing.
    expect(await repo.creatingBefore(clock, 10)).toEqual([]);
  });
});
