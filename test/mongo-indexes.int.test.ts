import { type Document, MongoClient, ObjectId, type Sort } from "mongodb";

// The stack's MongoDB-wire server, as the services use it. The bundled FerretDB carries a patch
// (deploy/ferretdb/index-pushdown.patch) that hands filters and sorts to SQLite so that its indexes are used; these
// tests hold it to the server's own (unpatched) evaluation: every find is compared with the same query run as an
// aggregation whose filter is wrapped in $and, which FerretDB evaluates entirely in Go without pushing anything down.
const dbName = `it_indexes_${Date.now()}`;
let mongo: MongoClient;
let isFerret = false;

const letters = ["x", "y", "z"];
type Doc = Document & { _id: string };
const docs: Doc[] = [];
for (let i = 0; i < 240; i++) {
  const doc: Doc = {
    _id: `d${String(i).padStart(3, "0")}`,
    a: letters[i % 3],
    n: i % 7 === 0 ? i + 0.5 : (i * 37) % 50,
    b: i % 2 === 0,
    d: new Date(Date.UTC(2026, 0, 1) + ((i * 7919) % 240) * 60_000),
    tags: [`t${i % 4}`, `t${i % 5}`],
    nested: { k: letters[i % 2] },
  };
  if (i % 5 !== 0) doc.s = i % 10 === 1 ? null : `s${i % 6}`;
  if (i % 11 === 0) doc.a = 1; // a number where strings usually are
  if (i % 13 === 0) doc.oid = new ObjectId(`${"0".repeat(22)}${(i % 256).toString(16).padStart(2, "0")}`);
  docs.push(doc);
}

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  const info = await mongo.db("admin").command({ buildInfo: 1 });
  isFerret = "ferretdb" in info || JSON.stringify(info).toLowerCase().includes("ferretdb");
  const c = mongo.db(dbName).collection<Doc>("docs");
  await c.createIndex({ a: 1, n: -1 }, { name: "a_n" });
  await c.createIndex({ d: -1, _id: -1 }, { name: "d_id" });
  await c.createIndex({ s: 1 }, { name: "s" });
  await c.createIndex({ b: 1, d: -1 }, { name: "b_d" });
  await c.insertMany(docs);
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

const since = new Date(Date.UTC(2026, 0, 1) + 60 * 60_000);
const until = new Date(Date.UTC(2026, 0, 1) + 180 * 60_000);

const cases: { name: string; filter: Document; sort: Sort; skip?: number; limit?: number }[] = [
  { name: "equality, sort by the index's next key", filter: { a: "x" }, sort: { n: -1, _id: 1 }, limit: 10 },
  { name: "equality on a number, mixed-type field", filter: { a: 1 }, sort: { n: 1, _id: 1 } },
  { name: "$in with skip and limit", filter: { a: { $in: ["x", "z"] } }, sort: { n: -1, _id: -1 }, skip: 7, limit: 9 },
  { name: "no filter, sort by date then _id", filter: {}, sort: { d: -1, _id: -1 }, limit: 25 },
  { name: "no filter, skip", filter: {}, sort: { d: -1, _id: -1 }, skip: 230, limit: 25 },
  { name: "date range", filter: { d: { $gte: since, $lt: until } }, sort: { d: -1, _id: -1 }, limit: 40 },
  { name: "boolean and date range", filter: { b: false, d: { $gt: since } }, sort: { d: -1, _id: 1 } },
  { name: "number range with doubles", filter: { n: { $gt: 10, $lte: 30.5 } }, sort: { n: 1, _id: 1 } },
  { name: "null matches null and missing", filter: { s: null }, sort: { _id: 1 } },
  { name: "string equality with $ne beside it", filter: { s: "s3", a: { $ne: "y" } }, sort: { _id: -1 } },
  { name: "sort on a field with nulls and missing", filter: { a: "y" }, sort: { s: 1, _id: 1 } },
  { name: "sort descending on a field with nulls", filter: {}, sort: { s: -1, _id: -1 }, limit: 50 },
  { name: "_id $in", filter: { _id: { $in: ["d001", "d100", "d239", "nope"] } }, sort: { _id: 1 } },
  { name: "_id range", filter: { _id: { $gte: "d100", $lt: "d120" } }, sort: { _id: -1 } },
  { name: "ObjectId equality", filter: { oid: new ObjectId(`${"0".repeat(22)}1a`) }, sort: { _id: 1 } },
  { name: "array membership with $all", filter: { tags: { $all: ["t1", "t2"] } }, sort: { d: -1, _id: -1 } },
  { name: "dotted path", filter: { "nested.k": "y", a: "z" }, sort: { n: -1, _id: 1 } },
  { name: "$or of indexed conditions", filter: { $or: [{ a: "x" }, { n: { $lt: 5 } }] }, sort: { n: 1, _id: 1 } },
  { name: "$or with null", filter: { $or: [{ s: null }, { n: { $gte: 40 } }] }, sort: { d: -1, _id: -1 } },
  {
    name: "$and with a nested $or",
    filter: { $and: [{ a: "x" }, { $or: [{ b: true }, { s: "s1" }] }] },
    sort: { _id: 1 },
  },
  {
    name: "$or with a branch kept by the server",
    filter: { $or: [{ a: "x" }, { "nested.k": "y" }] },
    sort: { _id: -1 },
  },
  { name: "$nor and $ne stay with the server", filter: { $nor: [{ a: "x" }], s: { $ne: null } }, sort: { _id: 1 } },
  { name: "$in mixing types", filter: { a: { $in: ["y", 1] } }, sort: { _id: 1 }, limit: 30 },
];

describe("the MongoDB-wire server's indexed queries", () => {
  it.each(cases)(
    "$name: find returns what the server's own evaluation returns",
    async ({ filter, sort, skip, limit }) => {
      const c = mongo.db(dbName).collection("docs");
      let cursor = c.find(filter).sort(sort);
      if (skip) cursor = cursor.skip(skip);
      if (limit) cursor = cursor.limit(limit);
      const found = (await cursor.toArray()).map((d) => d._id);

      const stages: Document[] = [{ $match: { $and: [filter] } }, { $sort: sort }];
      if (skip) stages.push({ $skip: skip });
      if (limit) stages.push({ $limit: limit });
      const expected = (await c.aggregate(stages).toArray()).map((d) => d._id);

      expect(expected.length).toBeGreaterThan(0);
      expect(found).toEqual(expected);
    },
  );

  it("counts, updates and deletes by indexed conditions like the server's own evaluation", async () => {
    const c = mongo.db(dbName).collection<Doc>("counted");
    await c.createIndex({ a: 1, b: 1 }, { name: "a_b" });
    await c.insertMany(docs);
    const model = async (filter: Document) => c.countDocuments({ $and: [filter] });
    expect(await c.countDocuments({ a: "x", b: true })).toBe(await model({ a: "x", b: true }));
    const updated = await c.updateMany({ a: "y", b: false }, { $set: { touched: true } });
    expect(updated.modifiedCount).toBe(await model({ a: "y", b: false }));
    expect(await c.countDocuments({ touched: true })).toBe(updated.modifiedCount);
    const deleted = await c.deleteMany({ a: { $in: ["z"] }, n: { $lt: 20 } });
    expect(deleted.deletedCount).toBeGreaterThan(0);
    expect(await model({ a: "z", n: { $lt: 20 } })).toBe(0);
    expect(await c.findOne({ _id: "d001" })).toMatchObject({ _id: "d001", a: "y" });
  });

  it("answers an equality-and-sort page from an index, without reading or sorting the collection", async () => {
    const plan = await mongo.db(dbName).collection("docs").find({ a: "x" }).sort({ n: -1 }).limit(10).explain();
    const text = JSON.stringify(plan);
    if (isFerret) {
      expect(text).toMatch(/USING INDEX \S+_a_n/);
      expect(text).not.toMatch(/TEMP B-TREE|detail=SCAN/);
      expect(plan).toMatchObject({ filterPushdown: true, sortPushdown: true });
    } else {
      expect(text).toContain("IXSCAN");
    }
  });
});
