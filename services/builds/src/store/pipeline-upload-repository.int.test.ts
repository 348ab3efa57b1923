import { MongoClient } from "mongodb";
import { createMongoPipelineUploadRepository } from "./pipeline-upload-repository.js";

// Pipeline upload records over the real MongoDB-wire server: a plan stored by an earlier version, which named a
// job's position stepIndex, is read with the name it has now (a crash can leave one unapplied across an upgrade).
let mongo: MongoClient;
const dbName = `it_uploads_${Date.now()}`;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

it("reads a plan stored with stepIndex positions as stepPosition", async () => {
  const db = mongo.db(dbName);
  const uploads = await createMongoPipelineUploadRepository(db);
  const legacyPlan = {
    jobs: [{ id: "new-1", stepIndex: 1.5, state: "pending" }],
    waitFor: [],
    remove: [],
    renumber: [{ id: "old-2", stepIndex: 3 }],
  };
  await db.collection("pipeline_uploads").insertOne({
    _id: "b-1:u-1" as never,
    buildId: "b-1",
    jobId: "j-1",
    state: "processing",
    planJson: JSON.stringify(legacyPlan),
    stepIds: ["s-1"],
    jobsAdded: 1,
    createdAt: new Date(),
  });
  const record = await uploads.find("b-1:u-1");
  expect(record?.plan?.jobs.map((j) => [j.id, j.stepPosition])).toEqual([["new-1", 1.5]]);
  expect(record?.plan?.jobs[0]).not.toHaveProperty("stepIndex");
  expect(record?.plan?.renumber).toEqual([{ id: "old-2", stepPosition: 3 }]);
});
