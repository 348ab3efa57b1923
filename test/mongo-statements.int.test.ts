import { MongoClient, MongoServerError } from "mongodb";

// The bundled FerretDB's SQLite driver keeps the statements each connection executed, compiled, and runs them again
// (deploy/ferretdb/sqlite-stmt-cache.patch). A kept statement must behave as a fresh one: new values every run, a
// run after a refused one, and the collection's indexes and the collection itself changing underneath it.
const dbName = `it_statements_${Date.now()}`;
let mongo: MongoClient;

type Doc = { _id: string; n?: number; tag?: string };

beforeAll(async () => {
  // One connection: every statement below runs on the server's connections in turn, again and again.
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "", { maxPoolSize: 1 }).connect();
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

describe("statements run again", () => {
  it("store each run's own values", async () => {
    const c = mongo.db(dbName).collection<Doc>("values");
    for (let i = 0; i < 40; i++) await c.insertOne({ _id: `d${i}`, n: i, tag: `t${i}` });
    for (let i = 0; i < 40; i++) await c.updateOne({ _id: `d${i}` }, { $set: { n: i * 10, tag: `u${i}` } });
    const docs = await c.find({}).sort({ n: 1 }).toArray();
    expect(docs).toEqual(Array.from({ length: 40 }, (_, i) => ({ _id: `d${i}`, n: i * 10, tag: `u${i}` })));
  });

  it("work after a run the unique index refused, and store nothing of the refused one", async () => {
    const c = mongo.db(dbName).collection<Doc>("refused");
    await c.createIndex({ tag: 1 }, { unique: true });
    for (let i = 0; i < 10; i++) {
      await c.insertOne({ _id: `ok${i}`, n: i, tag: `t${i}` });
      await expect(c.insertOne({ _id: `dup${i}`, n: -1, tag: `t${i}` })).rejects.toBeInstanceOf(MongoServerError);
      if (i > 0) {
        await expect(c.updateOne({ _id: `ok${i}` }, { $set: { tag: "t0", n: -1 } })).rejects.toBeInstanceOf(
          MongoServerError,
        );
      }
    }
    expect(await c.find({}).sort({ n: 1 }).toArray()).toEqual(
      Array.from({ length: 10 }, (_, i) => ({ _id: `ok${i}`, n: i, tag: `t${i}` })),
    );
  });

  it("follow the indexes made and dropped between runs", async () => {
    const c = mongo.db(dbName).collection<Doc>("indexes");
    await c.insertOne({ _id: "a", n: 1 });
    await c.updateOne({ _id: "a" }, { $set: { n: 2 } });
    await c.createIndex({ n: 1 }, { name: "by_n" });
    await c.updateOne({ _id: "a" }, { $set: { n: 3 } });
    await c.insertOne({ _id: "b", n: 3 });
    expect((await c.find({ n: 3 }).toArray()).map((d) => d._id).sort()).toEqual(["a", "b"]);
    await c.dropIndex("by_n");
    await c.updateOne({ _id: "a" }, { $set: { n: 4 } });
    expect(await c.findOne({ n: 4 })).toEqual({ _id: "a", n: 4 });
  });

  it("work on a collection dropped and made again", async () => {
    const c = mongo.db(dbName).collection<Doc>("again");
    for (let round = 0; round < 3; round++) {
      await c.insertOne({ _id: "x", n: round });
      await c.updateOne({ _id: "x" }, { $set: { n: round + 100 } });
      expect(await c.find({}).toArray()).toEqual([{ _id: "x", n: round + 100 }]);
      await c.drop();
    }
  });
});
