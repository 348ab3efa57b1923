import { type Document, MongoClient } from "mongodb";
import { type ArtifactDoc, createMongoArtifactRepository, filterQuery } from "./artifact-repository.js";

// A build's artifact search for one state, explained by the real MongoDB-wire server: it must be answered from the
// {buildId, state, createdAt, position, _id} index in its order, so that records a job created and never uploaded
// (thousands, within the per-job quota) are never read by a search for finished ones.
const dbName = `it_artifact_plans_${Date.now()}`;
let mongo: MongoClient;
let isFerret = false;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  const info = await mongo.db("admin").command({ buildInfo: 1 });
  isFerret = JSON.stringify(info).toLowerCase().includes("ferretdb");
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

const record = (i: number, state: ArtifactDoc["state"]): ArtifactDoc => ({
  _id: `a-${String(i).padStart(5, "0")}`,
  organizationId: "org-1",
  pipelineId: "p-1",
  buildId: "b-1",
  buildNumber: 1,
  jobId: `j-${i % 3}`,
  batchId: `batch-${Math.floor(i / 100)}`,
  position: i % 100,
  state,
  path: `out/${i}.txt`,
  globPath: "out/*.txt",
  mimeType: "text/plain",
  fileSize: 3,
  sha1sum: "0".repeat(40),
  sha256sum: "0".repeat(64),
  objectKey: `k/${i}`,
  createdAt: new Date(Date.UTC(2026, 10, 27, 0, 0, Math.floor(i / 100))),
  uploadedAt: null,
  endedAt: null,
  objectRemoved: false,
});

describe("artifact search plans", () => {
  it("reads only the build's records in the state asked for, from an index, in its order", async () => {
    const repo = await createMongoArtifactRepository(mongo.db(dbName));
    // 2,000 records created and never uploaded, 20 finished among them.
    await repo.insertMany(Array.from({ length: 2_020 }, (_, i) => record(i, i % 101 === 0 ? "finished" : "new")));
    const filter = filterQuery({ buildId: "b-1", state: "finished" });
    const sort = { createdAt: 1, position: 1, _id: 1 } as const;
    const found = await mongo
      .db(dbName)
      .collection<ArtifactDoc>("artifacts")
      .find(filter as Document)
      .sort(sort)
      .toArray();
    expect(found).toHaveLength(20);
    expect(found.every((a) => a.state === "finished")).toBe(true);
    const plan: Document = await mongo
      .db(dbName)
      .collection("artifacts")
      .find(filter as Document)
      .sort(sort)
      .explain("executionStats");
    const text = JSON.stringify(plan);
    if (isFerret) {
      // SQLite's plan: SEARCH … USING INDEX build_state_order, never a table SCAN or a sort of every match.
      expect(text).toMatch(/USING (COVERING )?INDEX \S*build_state_order/);
      expect(text).not.toMatch(/detail=SCAN artifacts_\w+"/);
      expect(text).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
    } else {
      expect(text).toContain("build_state_order");
      expect(text).not.toContain("COLLSCAN");
      expect((plan as { executionStats?: { totalDocsExamined?: number } }).executionStats?.totalDocsExamined).toBe(20);
    }
  });
});
