import { MongoClient } from "mongodb";
import type { UploadPlan } from "../domain/pipeline-upload.js";
import { aJob } from "../test-support.js";
import { createMemoryPipelineUploadRepository } from "./memory-pipeline-upload-repository.js";
import {
  createMongoPipelineUploadRepository,
  type PipelineUploadRepository,
  type UploadRecord,
} from "./pipeline-upload-repository.js";

// The PipelineUploadRepository contract, one set of cases run against the MongoDB implementation over the real
// MongoDB-wire server and against the in-memory one (testing.ts): one record per upload id, its plan kept until the
// upload is applied.
let mongo: MongoClient;
const dbName = `it_upload_contract_${Date.now()}`;
let databases = 0;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  for (let i = 1; i <= databases; i++) await mongo.db(`${dbName}_${i}`).dropDatabase();
  await mongo.close();
});

const implementations: Array<[string, () => Promise<PipelineUploadRepository>]> = [
  ["on MongoDB", () => createMongoPipelineUploadRepository(mongo.db(`${dbName}_${++databases}`))],
  ["in memory", async () => createMemoryPipelineUploadRepository()],
];

const plan: UploadPlan = {
  jobs: [aJob({ id: "new-1", stepPosition: 0.5, env: { "A.B": "1" } })],
  waitFor: [{ id: "j-2", state: "waiting", dependsOn: ["j-1", "new-1"] }],
  remove: [{ id: "j-3", state: "scheduled" }],
  renumber: [{ id: "j-4", stepPosition: 3 }],
};
const record = (uuid: string, buildId = "b-1"): UploadRecord => ({
  id: `${buildId}:${uuid}`,
  buildId,
  jobId: "j-1",
  state: "processing",
  plan,
  stepIds: ["s-1"],
  jobsAdded: 1,
  createdAt: new Date("2026-03-01T10:00:00.000Z"),
});

describe.each(implementations)("the PipelineUploadRepository %s", (_name, make) => {
  it("stores an upload once, keeps its plan as JSON gives it back until it is applied, and removes a build's", async () => {
    const uploads = await make();
    expect(await uploads.insert(record("u-1"))).toBe(true);
    expect(await uploads.insert({ ...record("u-1"), jobsAdded: 9 })).toBe(false);
    await uploads.insert(record("u-2", "b-2"));
    // The plan is kept as JSON text, and read back as JSON gives it.
    expect(await uploads.find("b-1:u-1")).toEqual({ ...record("u-1"), plan: JSON.parse(JSON.stringify(plan)) });
    expect(await uploads.find("b-1:u-9")).toBeNull();

    await uploads.markApplied("b-1:u-1");
    expect(await uploads.find("b-1:u-1")).toMatchObject({ state: "applied", plan: null, jobsAdded: 1 });

    await uploads.removeOfBuilds(["b-1"]);
    expect(await uploads.find("b-1:u-1")).toBeNull();
    expect((await uploads.find("b-2:u-2"))?.buildId).toBe("b-2");
  });
});
