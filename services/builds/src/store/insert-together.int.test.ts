import { type CommandStartedEvent, MongoClient } from "mongodb";
import { aBuild, aJob } from "../test-support.js";
import { createMongoBuildRepository, DuplicateBuildNumberError } from "./build-repository.js";

// Builds and jobs created at the same time go to the MongoDB-wire server in one insert command each
// (insert-batcher.ts in runtime), and each create still succeeds or fails on its own: a build whose number another
// took in the same command fails with DuplicateBuildNumberError, the others are stored.
const dbName = `it_insert_together_${Date.now()}`;
let mongo: MongoClient;
const inserts: CommandStartedEvent[] = [];

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "", { monitorCommands: true }).connect();
  mongo.on("commandStarted", (event) => {
    if (event.commandName === "insert") inserts.push(event);
  });
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

const insertsInto = (collection: string) => inserts.filter((e) => e.command.insert === collection);

describe("builds and jobs created at the same time", () => {
  it("share insert commands, and a number taken twice fails only the build that lost it", async () => {
    const repo = await createMongoBuildRepository(mongo.db(dbName));
    inserts.length = 0;
    // 20 builds of one pipeline; builds 17..19 ask for numbers 1..3 again.
    const wanted = Array.from({ length: 20 }, (_, i) => (i < 17 ? i + 1 : i - 16));
    const outcomes = await Promise.allSettled(
      wanted.map((number, i) => repo.insertBuild(aBuild({ id: `b-${i}`, pipelineId: "p-together", number }))),
    );
    const failed = outcomes.flatMap((o, i) => (o.status === "rejected" ? [{ i, reason: o.reason as unknown }] : []));
    expect(failed).toHaveLength(3);
    for (const f of failed) expect(f.reason).toBeInstanceOf(DuplicateBuildNumberError);
    // Every number is stored once, by a build whose insert resolved.
    const stored = await mongo.db(dbName).collection("builds").find({ pipelineId: "p-together" }).toArray();
    expect(stored.map((d) => d.number).sort((a, b) => a - b)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    const resolved = new Set(outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [`b-${i}`] : [])));
    for (const doc of stored) expect(resolved.has(String(doc._id))).toBe(true);
    // The first went alone; the other 19 arrived while it ran and went together.
    expect(insertsInto("builds").length).toBeLessThanOrEqual(3);

    inserts.length = 0;
    const jobLists = Array.from({ length: 10 }, (_, b) =>
      Array.from({ length: 3 }, (_, j) => aJob({ id: `j-${b}-${j}`, buildId: `b-${b}`, stepPosition: j })),
    );
    await Promise.all(jobLists.map((list) => repo.insertJobs(list)));
    expect(await mongo.db(dbName).collection("jobs").countDocuments({})).toBe(30);
    expect(insertsInto("jobs").length).toBeLessThanOrEqual(3);
    const stepsOf = async (b: number) => (await repo.jobsOf([`b-${b}`])).map((j) => j.id).sort();
    for (const b of [0, 9]) expect(await stepsOf(b)).toEqual(jobLists[b]?.map((j) => j.id));
  });

  it("a lone build goes at once, and a duplicate job id fails its own insert only", async () => {
    const repo = await createMongoBuildRepository(mongo.db(dbName));
    inserts.length = 0;
    await repo.insertBuild(aBuild({ id: "lone", pipelineId: "p-lone", number: 1 }));
    expect(insertsInto("builds")).toHaveLength(1);
    const [again, other] = await Promise.allSettled([
      repo.insertJobs([aJob({ id: "j-0-0", buildId: "lone" })]),
      repo.insertJobs([aJob({ id: "j-lone", buildId: "lone" })]),
    ]);
    expect(again.status).toBe("rejected");
    expect(other.status).toBe("fulfilled");
  });
});
