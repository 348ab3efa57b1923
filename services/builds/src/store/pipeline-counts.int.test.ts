import { randomUUID } from "node:crypto";
import { type Db, MongoClient } from "mongodb";
import { BUILD_STATES, JOB_STATES } from "../domain/types.js";
import { createMongoBuildRepository } from "./build-repository.js";

// A pipeline's counters over the real MongoDB-wire server: builds and jobs counted by state, waiter jobs aside.
let mongo: MongoClient;
let db: Db;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(`it_counts_${Date.now()}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await mongo.close();
});

it("counts a pipeline's builds and jobs in each state group, no waiters, and nothing of other pipelines", async () => {
  const repo = await createMongoBuildRepository(db);
  const pipelineId = randomUUID();
  const other = randomUUID();
  // n documents in each state: 1 of the first state, 2 of the second, …, so every group's sum says what it counted.
  const docs = (states: readonly string[], pid: string, type?: string) =>
    states.flatMap((state, i) =>
      Array.from({ length: i + 1 }, () => ({ _id: randomUUID(), pipelineId: pid, state, ...(type ? { type } : {}) })),
    );
  await db.collection("builds").insertMany([...docs(BUILD_STATES, pipelineId), ...docs(BUILD_STATES, other)] as never);
  // Jobs of every counted type, spread over the states; waiters in every state too, which no counter counts.
  const types = ["script", "manual", "trigger"];
  const jobs = [...docs(JOB_STATES, pipelineId), ...docs(JOB_STATES, other, "script")].map((job, i) => ({
    ...job,
    type: job.type ?? types[i % types.length],
  }));
  await db.collection("jobs").insertMany([...jobs, ...docs(JOB_STATES, pipelineId, "waiter")] as never);
  const weight = (states: readonly string[], of: readonly string[]) =>
    of.reduce((sum, s) => sum + states.indexOf(s) + 1, 0);
  expect(await repo.pipelineCounts(pipelineId)).toEqual({
    scheduledBuilds: weight(BUILD_STATES, ["scheduled"]),
    runningBuilds: weight(BUILD_STATES, ["running", "failing", "canceling"]),
    scheduledJobs: weight(JOB_STATES, ["scheduled", "assigned"]),
    runningJobs: weight(JOB_STATES, ["accepted", "running", "canceling", "timing_out"]),
    waitingJobs: weight(JOB_STATES, ["pending", "waiting", "blocked", "limited", "limiting"]),
  });
  expect(await repo.pipelineCounts(randomUUID())).toEqual({
    scheduledBuilds: 0,
    runningBuilds: 0,
    scheduledJobs: 0,
    runningJobs: 0,
    waitingJobs: 0,
  });
});
