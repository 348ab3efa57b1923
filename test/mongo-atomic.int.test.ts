import { MongoClient } from "mongodb";

// The stack's MongoDB-wire server applies conditional updates atomically: many clients racing to move one
// document from a state, or to increment one counter, behave as if they ran one after another. Upstream FerretDB v1
// failed all three (of 20 racing compare-and-sets up to 13 won; 20 increments left 1–3); the bundled FerretDB
// carries deploy/ferretdb/atomic-updates.patch.
const dbName = `it_atomic_${Date.now()}`;
const RACERS = 20;
const ROUNDS = 5;
let mongo: MongoClient;

type Doc = { _id: string; state?: string; n?: number };

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "", { maxPoolSize: RACERS + 5 }).connect();
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

const race = <T>(work: () => Promise<T>) => Promise.all(Array.from({ length: RACERS }, work));

describe("conditional updates under concurrency", () => {
  it("lets exactly one of many updateOne compare-and-sets win", async () => {
    const c = mongo.db(dbName).collection<Doc>("cas");
    for (let round = 0; round < ROUNDS; round++) {
      const _id = `doc-${round}`;
      await c.insertOne({ _id, state: "scheduled" });
      const results = await race(() => c.updateOne({ _id, state: "scheduled" }, { $set: { state: "assigned" } }));
      expect(results.reduce((sum, r) => sum + r.modifiedCount, 0)).toBe(1);
      expect(await c.findOne({ _id })).toEqual({ _id, state: "assigned" });
    }
  });

  it("lets exactly one of many findOneAndUpdate compare-and-sets win and return the document", async () => {
    const c = mongo.db(dbName).collection<Doc>("fam");
    for (let round = 0; round < ROUNDS; round++) {
      const _id = `doc-${round}`;
      await c.insertOne({ _id, state: "scheduled" });
      const results = await race(() =>
        c.findOneAndUpdate({ _id, state: "scheduled" }, { $set: { state: "assigned" } }, { returnDocument: "after" }),
      );
      expect(results.filter((r) => r !== null)).toEqual([{ _id, state: "assigned" }]);
    }
  });

  it("loses no increment", async () => {
    const c = mongo.db(dbName).collection<Doc>("counters");
    for (let round = 0; round < ROUNDS; round++) {
      const _id = `counter-${round}`;
      await race(() => c.updateOne({ _id }, { $inc: { n: 1 } }, { upsert: true }));
      expect(await c.findOne({ _id })).toEqual({ _id, n: RACERS });
    }
  });

  it("deletes a document once when many conditional deletes race with an update", async () => {
    const c = mongo.db(dbName).collection<Doc>("deletes");
    for (let round = 0; round < ROUNDS; round++) {
      const _id = `doc-${round}`;
      await c.insertOne({ _id, state: "finished" });
      const [updated, ...deleted] = await Promise.all([
        c.updateOne({ _id, state: "finished" }, { $set: { state: "running" } }),
        ...Array.from({ length: RACERS }, () => c.deleteOne({ _id, state: "finished" })),
      ]);
      const deletions = deleted.reduce((sum, r) => sum + r.deletedCount, 0);
      // either the update came first (nothing deleted, the document stays running) or one delete did
      expect(deletions + (updated?.modifiedCount ?? 0)).toBe(1);
      expect(await c.countDocuments({ _id })).toBe(1 - deletions);
    }
  });
});

describe("update commands with many statements", () => {
  // Upstream FerretDB v1 kept every statement's query of one update command open until the command ended; past the
  // SQLite pool's 100 connections the command waited forever, and with the collection locked every other write
  // waited too (found when 500 agents' sightings were written in one bulk). deploy/ferretdb/update-statements.patch.
  it("applies a bulk of 250 updates to one collection, and other writes to it go on", async () => {
    const c = mongo.db(dbName).collection<Doc>("bulk");
    await c.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: `d${i}`, n: 0 })));
    const bulk = c.bulkWrite(
      Array.from({ length: 250 }, (_, i) => ({ updateOne: { filter: { _id: `d${i}` }, update: { $inc: { n: 1 } } } })),
      { ordered: false },
    );
    const other = c.findOneAndUpdate({ _id: "d0" }, { $inc: { n: 10 } }, { returnDocument: "after" });
    const [result] = await Promise.all([bulk, other]);
    expect(result.modifiedCount).toBe(250);
    expect(await c.countDocuments({ n: { $gte: 1 } })).toBe(250);
    expect((await c.findOne({ _id: "d0" }))?.n).toBe(11);
  }, 20_000);
});
