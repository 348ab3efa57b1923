import { type Document, MongoClient } from "mongodb";
import { type BuildListFilter, buildListQuery, splitBuildList } from "./build-list-query.js";
import { createMongoBuildRepository } from "./build-repository.js";

// Every build list the API can ask for, explained by the real MongoDB-wire server: each must be answered from an
// index, in the index's order, so that a page costs the same however many builds there are.
const dbName = `it_build_plans_${Date.now()}`;
let mongo: MongoClient;
let isFerret = false;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  const info = await mongo.db("admin").command({ buildInfo: 1 });
  isFerret = JSON.stringify(info).toLowerCase().includes("ferretdb");
  await createMongoBuildRepository(mongo.db(dbName));
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

const org = { organizationIds: ["org-1"] };
const day = new Date("2026-11-01T00:00:00Z");
const lists: Array<[string, BuildListFilter]> = [
  ["an organization's builds", org],
  ["a pipeline's builds", { ...org, pipelineId: "p-1" }],
  ["a pipeline's builds on branches", { ...org, pipelineId: "p-1", branches: ["main", "dev"] }],
  ["a pipeline's builds in states", { ...org, pipelineId: "p-1", states: ["passed", "failed"] }],
  ["a pipeline's blocked or running builds", { ...org, pipelineId: "p-1", states: ["blocked", "running"] }],
  [
    "a pipeline's builds of commits on a branch",
    { ...org, pipelineId: "p-1", commits: ["a".repeat(40)], branches: ["main"] },
  ],
  ["a pipeline's builds by a creator", { ...org, pipelineId: "p-1", creatorId: "u-1" }],
  ["an organization's builds on a branch", { ...org, branches: ["main"] }],
  ["an organization's builds in a state", { ...org, states: ["running"] }],
  ["an organization's builds of a commit", { ...org, commits: ["a".repeat(40)] }],
  ["an organization's builds by a creator", { ...org, creatorId: "u-1" }],
  ["an organization's builds with meta-data", { ...org, metaPairs: ["env=prod"] }],
  ["an organization's builds created in a window", { ...org, createdFrom: day, createdTo: new Date(+day + 864e5) }],
  ["an organization's builds finished since", { ...org, finishedFrom: day }],
  ["a state and a branch together", { ...org, states: ["passed"], branches: ["main"], createdFrom: day }],
  ["the builds of two organizations", { organizationIds: ["org-1", "org-2"] }],
  ["two organizations' builds in a state", { organizationIds: ["org-1", "org-2"], states: ["failed"] }],
  ["a team member's pipelines", { organizationIds: [], pipelineIds: ["p-1", "p-2", "p-3"] }],
  ["one organization and pipelines of another", { ...org, pipelineIds: ["p-1", "p-2"], branches: ["main"] }],
];

describe("build lists", () => {
  it.each(lists)("%s: served by an index, in its order", async (_name, list) => {
    for (const part of splitBuildList(list)) await expectIndexOrdered(part);
  });
});

async function expectIndexOrdered(list: BuildListFilter) {
  const { filter, sort } = buildListQuery(list);
  const plan: Document = await mongo
    .db(dbName)
    .collection("builds")
    .find(filter as Document)
    .sort(sort)
    .limit(31)
    .explain();
  const text = JSON.stringify(plan);
  if (isFerret) {
    // SQLite's plan: SEARCH … USING INDEX, never a table SCAN or a sort of every match
    expect(text).toMatch(/USING (COVERING )?INDEX (_ferretdb_query_)?builds_\w+_(pipeline|org)_\w+/);
    expect(text).not.toMatch(/detail=SCAN builds_\w+"/);
    expect(text).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
  } else {
    expect(text).toContain("IXSCAN");
    expect(text).not.toContain("COLLSCAN");
  }
}

describe("indexes", () => {
  it("drops at start the indexes an earlier version made that nothing reads by", async () => {
    const db = mongo.db(`${dbName}_retired`);
    try {
      await db.collection("builds").createIndex({ state: 1, createdAt: 1 }, { name: "state_age" });
      await db.collection("jobs").createIndex({ pipelineId: 1, state: 1 }, { name: "pipeline_job_state" });
      await createMongoBuildRepository(db);
      const names = async (collection: string) =>
        (await db.collection(collection).listIndexes().toArray()).map((index) => String(index.name));
      expect(await names("builds")).toContain("org_newest_first");
      expect(await names("builds")).not.toContain("state_age");
      expect(await names("jobs")).toContain("pipeline_job_counts");
      expect(await names("jobs")).not.toContain("pipeline_job_state");
    } finally {
      await db.dropDatabase();
    }
  });
});
