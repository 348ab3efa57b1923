import { MongoClient, MongoServerError } from "mongodb";

// An update of many documents stores what MongoDB stores, when it succeeds and when it fails part-way. The bundled
// FerretDB writes the documents one statement changes together (deploy/ferretdb/update-batches.patch: up to 100 in
// one SQLite transaction, where upstream used one each); these are the outcomes that must not change with it:
// documents are changed in their natural order, and when one is refused (a unique index, an operator it cannot
// take) the ones before it are stored, it and the ones after it are not, and the command reports the error.
const dbName = `it_update_many_${Date.now()}`;
let mongo: MongoClient;

type Doc = { _id: number; group: number; tag?: string; n?: number };

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

/** A new collection of `count` documents, _id 1..count, each in its own group unless `group` says otherwise. */
async function collectionOf(name: string, count: number, group: (id: number) => number = (id) => id) {
  const c = mongo.db(dbName).collection<Doc>(name);
  const docs = Array.from({ length: count }, (_, i) => ({ _id: i + 1, group: group(i + 1), n: 0 }));
  await c.insertMany(docs);
  return c;
}

/** The ids whose documents carry `tag`, in order. */
const tagged = async (c: Awaited<ReturnType<typeof collectionOf>>, tag: string) =>
  (await c.find({ tag }).sort({ _id: 1 }).toArray()).map((d) => d._id);

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("an update of many documents", () => {
  it("changes and counts every document it matches, past one write's 100 documents", async () => {
    const c = await collectionOf("many", 250);
    const result = await c.updateMany({ _id: { $lte: 240 } }, { $set: { tag: "done" }, $inc: { n: 2 } });
    expect({ matched: result.matchedCount, modified: result.modifiedCount }).toEqual({ matched: 240, modified: 240 });
    expect(await tagged(c, "done")).toEqual(range(1, 240));
    expect(await c.countDocuments({ n: 2 })).toBe(240);
    expect(await c.countDocuments({ n: 0, tag: { $exists: false } })).toBe(10);
  });

  it("counts as modified only the documents it changed", async () => {
    const c = await collectionOf("unchanged", 10);
    await c.updateMany({ _id: { $in: [2, 5, 9] } }, { $set: { tag: "same" } });
    const result = await c.updateMany({}, { $set: { tag: "same" } });
    expect({ matched: result.matchedCount, modified: result.modifiedCount }).toEqual({ matched: 10, modified: 7 });
    expect(await tagged(c, "same")).toEqual(range(1, 10));
  });

  it.each([
    ["the 7th of 10", 10, 7],
    ["the 150th of 180 (after a full write of 100)", 180, 150],
  ])("stops at a document a unique index refuses, %s: those before it are stored", async (_, count, refused) => {
    // Documents 1 and `refused` share a group: once document 1 holds (tag, group), `refused` cannot.
    const c = await collectionOf(`unique_${refused}`, count, (id) => (id === refused ? 1 : id));
    await c.createIndex({ tag: 1, group: 1 }, { unique: true });
    const failure = await c.updateMany({}, { $set: { tag: "t" } }).catch((err: unknown) => err);
    // MongoDB says 11000 (duplicate key); FerretDB v1 says 1 (internal error) for a refusal inside an update.
    expect(failure).toBeInstanceOf(MongoServerError);
    expect(await tagged(c, "t")).toEqual(range(1, refused - 1));
  });

  it("stops at a document an operator cannot change: those before it are stored", async () => {
    const c = await collectionOf("operator", 12);
    // A string where the update increments a number (through another view of the collection: Doc says n is a number).
    await mongo
      .db(dbName)
      .collection<{ _id: number; n: string }>("operator")
      .updateOne({ _id: 8 }, { $set: { n: "eight" } });
    const failure = await c.updateMany({}, { $set: { tag: "t" }, $inc: { n: 1 } }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(MongoServerError);
    expect(await tagged(c, "t")).toEqual(range(1, 7));
    expect(await c.countDocuments({ n: 1 })).toBe(7);
    expect(await c.findOne({ _id: 8 })).toEqual({ _id: 8, group: 8, n: "eight" });
  });

  it("applies a conditional updateMany only to the documents still matching, and upserts none", async () => {
    const c = await collectionOf("conditional", 6);
    await c.updateMany({ _id: { $in: [2, 4] } }, { $set: { tag: "moved" } });
    const result = await c.updateMany(
      { _id: { $in: [1, 2, 3, 4, 7] }, tag: { $exists: false } },
      { $set: { tag: "first" } },
      { upsert: false },
    );
    expect({ matched: result.matchedCount, modified: result.modifiedCount }).toEqual({ matched: 2, modified: 2 });
    expect(await tagged(c, "first")).toEqual([1, 3]);
    expect(await tagged(c, "moved")).toEqual([2, 4]);
  });
});
