import {
  Binary,
  BSON,
  BSONRegExp,
  type Collection,
  type Document,
  Double,
  Int32,
  Long,
  type MongoClient,
  ObjectId,
  type Sort,
  Timestamp,
} from "mongodb";

// The differential test of the bundled FerretDB's pushdown (deploy/ferretdb/index-pushdown.patch and
// sort-pushdown.patch): random documents of every BSON type FerretDB stores, random indexes, and random queries,
// counts, updates and deletes, run against a server with pushdown and against the same binary with
// --test-disable-pushdown (FerretDB's own evaluation of every document), the answers compared exactly.

/** A seeded random source (mulberry32). */
export class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
}

const OIDS = [
  "000000000000000000000001",
  "00000000000000000000000a",
  "5f1d7b6e8c9a0b1c2d3e4f50",
  "ffffffffffffffffffffffff",
];

/** A double from random bits: any magnitude, subnormals included (never NaN or infinite: FerretDB refuses them). */
function anyDouble(r: Random): number {
  const view = new DataView(new ArrayBuffer(8));
  for (;;) {
    view.setUint32(0, r.int(2 ** 32));
    view.setUint32(4, r.int(2 ** 32));
    const d = view.getFloat64(0);
    if (Number.isFinite(d)) return d;
  }
}

/** The kinds of values, each a generator. */
const KINDS = {
  null: () => null,
  int: (r: Random) => new Int32(r.pick([-3, -1, 0, 1, 2, 3, 7, 100, -2147483648, 2147483647])),
  long: (r: Random) =>
    Long.fromString(
      r.pick(["0", "1", "3", "-5", "9007199254740993", "9007199254740992", "-9223372036854775808", "1700000000000"]),
    ),
  double: (r: Random) => new Double(r.pick([0, 1, 2.5, -0.5, 3, 0.1, 1e-7, 123456.789, 1e21, -7.25, 1700000000000])),
  xdouble: (r: Random) =>
    new Double(
      r.chance(0.5)
        ? anyDouble(r)
        : r.pick([
            -2.4696375807480797e-142, 2.4696375807480797e-142, 5e-324, -5e-324, 2.2250738585072014e-308,
            1.7976931348623157e308, -1.7976931348623157e308, 1e-100, 1e200, 3.4e-71, 6.72e-84, 2.02e118, 0,
          ]),
    ),
  string: (r: Random) =>
    r.pick(["", "a", "b", "B", "ab", "é", "x\u0000y", "<&>", '"q"', "0", "1", "s1", "s2", "\u{1F600}", OIDS[0]]),
  bool: (r: Random) => r.chance(0.5),
  date: (r: Random) => new Date(r.pick([0, 1, 5, -1000, 1700000000000, 3])),
  objectId: (r: Random) => new ObjectId(r.pick(OIDS)),
  binary: (r: Random) =>
    new Binary(Buffer.from(r.pick([[], [0], [255], [1, 2], [0, 0, 0], [255, 255, 255, 255]])), r.pick([0, 0, 4, 128])),
  object: (r: Random) =>
    r.pick<Document>([
      {},
      { y: 0 },
      { a: 1 },
      { a: 1, b: 2 },
      { b: 2, a: 1 },
      { a: "x" },
      { a: { b: 1 } },
      { a: [1, 2] },
    ]),
  array: (r: Random): unknown[] =>
    r.chance(0.5)
      ? r.pick<unknown[]>([[], [1], [1, 2], [2, 1], ["a"], ["a", 1], [null], [{ a: 1 }], [3, "x", true], [1.5, -0.5]])
      : Array.from({ length: r.int(4) }, () =>
          scalar(r, ["null", "int", "double", "string", "bool", "date", "objectId"]),
        ),
  regex: (r: Random) => r.pick([new BSONRegExp("a"), new BSONRegExp("^b", "i"), new BSONRegExp("s\\d")]),
  timestamp: (r: Random) =>
    r.pick([new Timestamp({ t: 1, i: 2 }), new Timestamp({ t: 4294967295, i: 5 }), new Timestamp({ t: 7, i: 0 })]),
} as const;

type Kind = keyof typeof KINDS;

function scalar(r: Random, kinds: readonly Kind[]): unknown {
  return KINDS[r.pick(kinds)](r);
}

const ALL_KINDS = Object.keys(KINDS) as Kind[];
const SCALARS: Kind[] = ["null", "int", "long", "double", "string", "bool", "date", "objectId"];

/** What a field holds in one collection: the kinds its values are drawn from, and how often it is missing. */
const PROFILES: Array<{ name: string; kinds: Kind[] }> = [
  { name: "strings", kinds: ["string"] },
  { name: "strings", kinds: ["string", "null"] },
  { name: "numbers", kinds: ["int", "long", "double"] },
  { name: "numbers", kinds: ["int", "double", "null"] },
  { name: "numbers and strings", kinds: ["int", "double", "string", "null"] },
  { name: "dates", kinds: ["date", "null"] },
  { name: "booleans", kinds: ["bool"] },
  { name: "ObjectIds", kinds: ["objectId", "null"] },
  { name: "scalars", kinds: SCALARS },
  { name: "dates and strings", kinds: ["date", "string"] },
  { name: "ids and strings", kinds: ["objectId", "string", "date"] },
  { name: "arrays and scalars", kinds: ["array", "int", "string", "null"] },
  { name: "extreme doubles", kinds: ["xdouble", "double", "int"] },
  { name: "objects and binary", kinds: ["object", "binary", "string"] },
  { name: "anything", kinds: ALL_KINDS },
];

interface Shape {
  fields: Array<{ name: string; kinds: Kind[]; missing: number }>;
  ids: "ints" | "strings" | "mixed" | "any";
}

const FIELDS = ["a", "b", "c", "d", "e", "f"];

function randomShape(r: Random): Shape {
  return {
    fields: FIELDS.map((name) => ({ name, kinds: r.pick(PROFILES).kinds, missing: r.pick([0, 0.1, 0.4]) })),
    ids: r.pick(["ints", "strings", "mixed", "any"] as const),
  };
}

const ODD_STRINGS = ["<&>", 'q"q', "x\u0000y", "é", "\u{1F600}", "", " "];

function randomId(r: Random, shape: Shape, i: number): unknown {
  switch (shape.ids) {
    case "ints":
      return i;
    case "strings":
      return `k${String(i).padStart(4, "0")}${i % 9 === 0 ? r.pick(ODD_STRINGS) : ""}`;
    default:
      switch (i % (shape.ids === "any" ? 6 : 5)) {
        case 0:
          return new ObjectId(i.toString(16).padStart(24, "0"));
        case 1:
          return `k${i}`;
        case 2:
          return new Int32(i);
        case 3:
          return new Double(i + 0.5);
        case 4:
          return new Date(i * 1000);
        default:
          return i % 4 === 1 ? { n: i } : new Binary(Buffer.from([i % 256, i >> 8]), 0);
      }
  }
}

function randomDoc(r: Random, shape: Shape, _id: unknown): Document {
  const doc: Document = { _id };
  for (const f of shape.fields) {
    if (r.chance(f.missing)) continue;
    doc[f.name] = scalar(r, f.kinds);
  }
  return doc;
}

/** A value to compare a field with (or to set it to): mostly of the kinds the field holds, so that conditions match. */
function operand(r: Random, shape: Shape, field: string, own = 0.75): unknown {
  const f = shape.fields.find((x) => x.name === field);
  const kinds = f && r.chance(own) ? f.kinds.filter((k) => k !== "regex") : ALL_KINDS.filter((k) => k !== "regex");
  return scalar(r, kinds.length ? kinds : SCALARS);
}

function fieldPredicate(r: Random, shape: Shape, field: string): unknown {
  const v = () => operand(r, shape, field);
  const p = r.next();
  if (p < 0.3) return v();
  if (p < 0.45) return { $in: Array.from({ length: 1 + r.int(3) }, v) };
  if (p < 0.65) {
    const ops = ["$gt", "$gte", "$lt", "$lte"];
    const first = r.pick(ops);
    const res: Document = { [first]: v() };
    if (r.chance(0.5)) res[r.pick(ops.filter((o) => o !== first))] = v();
    return res;
  }
  if (p < 0.7) return { $eq: v() };
  if (p < 0.74) return { $ne: v() };
  if (p < 0.77) return { $nin: [v(), v()] };
  if (p < 0.8) return { $exists: r.chance(0.5) };
  if (p < 0.84) return null;
  if (p < 0.87)
    return r.chance(0.5) ? new BSONRegExp(r.pick(["a", "^s", "B"]), r.pick(["", "i"])) : { $regex: "s", $options: "i" };
  if (p < 0.9) return { $all: [v()] };
  if (p < 0.92) return { $size: r.int(3) };
  if (p < 0.94) return { $type: r.pick(["string", "number", "array", "date"]) };
  if (p < 0.96) return { $not: { $gt: v() } };
  if (p < 0.98) return { $elemMatch: { $gte: v() } };
  return { $in: [v(), new BSONRegExp("^a")] };
}

/**
 * A filter of string equalities and $in on one to three fields ({f: "s"}, {f: {$eq: "s"}}, {f: {$in: [...]}}), with
 * operands mostly of the kinds each field holds: strings on fields of strings, other kinds elsewhere.
 */
function stringFilter(r: Random, shape: Shape): Document {
  const filter: Document = {};
  for (let i = 1 + r.int(3); i > 0; i--) {
    const field = r.pick(shape.fields);
    const v = () =>
      field.kinds.includes("string") && r.chance(0.85) ? KINDS.string(r) : operand(r, shape, field.name);
    const p = r.next();
    filter[field.name] = p < 0.5 ? v() : p < 0.65 ? { $eq: v() } : { $in: Array.from({ length: 1 + r.int(3) }, v) };
  }
  return filter;
}

/** Filters FerretDB answers with an error (once a document reaches the failing part). */
const INVALID_FILTERS: Document[] = [
  { a: { $in: 5 } },
  { b: { $foo: 1 } },
  { $and: [] },
  { c: { $regex: "s", $options: "x" } },
  { d: { $gt: new BSONRegExp("a") } },
  { $where: "true" },
  { e: { $in: [{ $gt: 1 }] } },
  { f: { $size: "x" } },
];

export function randomFilter(r: Random, shape: Shape, depth = 0): Document {
  if (depth === 0 && r.chance(0.015)) {
    const invalid = r.pick(INVALID_FILTERS);
    return r.chance(0.5) ? invalid : { ...randomFilter(r, shape, 1), ...invalid };
  }
  const filter: Document = {};
  const n = depth > 0 ? 1 + r.int(2) : r.int(4);
  for (let i = 0; i < n; i++) {
    const p = r.next();
    if (depth < 2 && p < 0.12) {
      filter.$or = Array.from({ length: 2 + r.int(2) }, () => randomFilter(r, shape, depth + 1));
    } else if (depth < 2 && p < 0.18) {
      filter.$and = Array.from({ length: 2 }, () => randomFilter(r, shape, depth + 1));
    } else if (depth < 2 && p < 0.2) {
      filter.$nor = [randomFilter(r, shape, depth + 1)];
    } else {
      const field = r.chance(0.1) ? "_id" : r.pick(FIELDS);
      const key = r.chance(0.06) ? `${field}.${r.pick(["a", "0", "y"])}` : field;
      filter[key] = fieldPredicate(r, shape, key === "_id" ? "_id" : field);
    }
  }
  return filter;
}

/** A random sort; total (ending with _id) when total is set. */
function randomSort(r: Random, total: boolean): Document {
  const sort: Document = {};
  const keys = 1 + r.int(2);
  for (let i = 0; i < keys; i++) sort[r.pick(FIELDS)] = r.pick([1, -1]);
  if (total) sort._id = r.pick([1, -1]);
  return sort;
}

function randomUpdate(r: Random, shape: Shape): Document {
  const field = r.pick(FIELDS);
  const other = r.pick(FIELDS);
  switch (r.int(6)) {
    case 0:
    case 5:
      return { $set: { [field]: operand(r, shape, field, 0.95) } };
    case 1:
      return { $set: { [field]: r.chance(0.1) ? scalar(r, ALL_KINDS) : operand(r, shape, field, 0.95) } };
    case 2:
      return { $inc: { [field]: r.pick([1, -2, 0.5]) } };
    case 3:
      return { $unset: { [field]: "" } };
    default:
      return { $set: { [field]: operand(r, shape, field, 0.95), [other]: operand(r, shape, other, 0.95) } };
  }
}

const canonical = (x: unknown) => BSON.EJSON.stringify(x as Document, { relaxed: false });

/** A number's exact value as text (1, 1.0 and Long 1 alike), for comparing sort keys. */
function numberText(v: unknown): string | undefined {
  if (typeof v === "number") return Number.isInteger(v) && Math.abs(v) < 2 ** 64 ? BigInt(v).toString() : String(v);
  if (v instanceof Int32 || v instanceof Double) return numberText(v.valueOf());
  if (v instanceof Long) return v.toString();
  return undefined;
}

function sortKey(doc: Document, sort: Document): string {
  return Object.keys(sort)
    .map((k) => {
      const v = doc[k] ?? null;
      const n = numberText(v);
      return n !== undefined ? `n:${n}` : canonical({ v });
    })
    .join("|");
}

/**
 * Whether two answers to a sorted find agree: the same sequence of sort keys, and the same documents among each
 * run of equal keys. (FerretDB's own sort is not stable; SQLite gives documents with equal keys in insertion order.)
 */
function sameSorted(a: Document[], b: Document[], sort: Document): boolean {
  if (a.length !== b.length) return false;
  let i = 0;
  while (i < a.length) {
    const key = sortKey(a[i] as Document, sort);
    let j = i;
    while (j < a.length && sortKey(a[j] as Document, sort) === key && sortKey(b[j] as Document, sort) === key) j++;
    if (j === i) return false;
    const ga = a.slice(i, j).map(canonical).sort();
    const gb = b.slice(i, j).map(canonical).sort();
    if (ga.join("\n") !== gb.join("\n")) return false;
    i = j;
  }
  return true;
}

async function outcome<T>(work: () => Promise<T>): Promise<{ ok: T } | { error: string }> {
  try {
    return { ok: await work() };
  } catch (err) {
    const e = err as { code?: unknown; message?: string };
    return { error: `${String(e.code)} ${e.message ?? String(err)}` };
  }
}

export interface DifferentialOptions {
  seed: number;
  /** Stop after this many operations, or at the deadline, whichever comes first. */
  operations: number;
  deadline: number;
  collections: number;
  docsPerCollection: number;
  log?: (line: string) => void;
}

export interface DifferentialReport {
  operations: number;
  byKind: Record<string, number>;
  mismatches: string[];
  pushedFilters: number;
  pushedSorts: number;
}

/**
 * Runs random operations against two servers holding the same data (a: pushdown, b: the oracle) and reports every
 * answer that differs.
 */
export async function runDifferential(
  a: MongoClient,
  b: MongoClient,
  dbName: string,
  options: DifferentialOptions,
): Promise<DifferentialReport> {
  const r = new Random(options.seed);
  const report: DifferentialReport = { operations: 0, byKind: {}, mismatches: [], pushedFilters: 0, pushedSorts: 0 };
  const mismatch = (what: string, x: unknown, y: unknown) => {
    if (report.mismatches.length < 20) {
      report.mismatches.push(
        `${what}\n  pushdown: ${canonical({ x }).slice(0, 1500)}\n  oracle:   ${canonical({ y }).slice(0, 1500)}`,
      );
    }
  };
  const both = <T>(work: (c: Collection) => Promise<T>, name: string) =>
    Promise.all([
      outcome(() => work(a.db(dbName).collection(name))),
      outcome(() => work(b.db(dbName).collection(name))),
    ]);

  const shapes: Shape[] = [];
  const nextId: number[] = [];
  for (let c = 0; c < options.collections; c++) {
    const shape = randomShape(r);
    shapes.push(shape);
    const name = `c${c}`;
    const generated = Array.from({ length: r.int(5) }, () => {
      const key: Document = {};
      const n = 1 + r.int(3);
      for (let i = 0; i < n; i++) key[r.chance(0.15) ? "_id" : r.pick(FIELDS)] = r.pick([1, -1]);
      if (Object.keys(key).length === 1 && "_id" in key) key.a = 1; // an index of _id alone must be {_id: 1}
      return key;
    });
    // A key drawn twice would be refused under its second name (as MongoDB refuses it): each key once.
    const indexes = generated.filter((key, i) => generated.findIndex((k) => canonical(k) === canonical(key)) === i);
    const docs = Array.from({ length: options.docsPerCollection }, (_, i) =>
      randomDoc(r, shape, randomId(r, shape, i)),
    );
    nextId.push(docs.length);
    // half the indexes before the documents, half after (built over stored documents)
    for (const [server, client] of [
      ["pushdown", a],
      ["oracle", b],
    ] as const) {
      const coll = client.db(dbName).collection(name);
      for (const [i, key] of indexes.entries()) if (i % 2 === 0) await coll.createIndex(key, { name: `i${i}` });
      const res = await outcome(() => coll.insertMany(docs, { ordered: false }));
      if ("error" in res) throw new Error(`insert into ${server} failed: ${res.error}`);
      for (const [i, key] of indexes.entries()) if (i % 2 === 1) await coll.createIndex(key, { name: `i${i}` });
    }
    options.log?.(
      `c${c}: _id ${shape.ids}, ${shape.fields.map((f) => `${f.name}: ${f.kinds.join("/")}`).join(", ")}; indexes ${canonical(indexes)}`,
    );
  }

  const count = (kind: string) => {
    report.operations++;
    report.byKind[kind] = (report.byKind[kind] ?? 0) + 1;
  };

  while (report.operations < options.operations && Date.now() < options.deadline) {
    const c = r.int(options.collections);
    const name = `c${c}`;
    const shape = shapes[c] as Shape;
    const filter = randomFilter(r, shape);
    const p = r.next();
    const label = (kind: string, extra: unknown = {}) =>
      `${kind} on ${name}: ${canonical({ filter, ...(extra as object) })}`;

    if (p < 0.5) {
      // find: unsorted (insertion order), sorted by a total order with skip and limit, or sorted with ties
      const mode = r.int(3);
      const sort = mode === 0 ? undefined : randomSort(r, mode === 1);
      const skip = mode === 1 && r.chance(0.5) ? r.int(20) : 0;
      const limit = mode !== 2 && r.chance(0.6) ? 1 + r.int(15) : 0;
      count(mode === 0 ? "find" : mode === 1 ? "find sorted" : "find sorted with ties");
      const [x, y] = await both((coll) => {
        let cursor = coll.find(filter);
        if (sort) cursor = cursor.sort(sort as Sort);
        if (skip) cursor = cursor.skip(skip);
        if (limit) cursor = cursor.limit(limit);
        return cursor.toArray();
      }, name);
      const same =
        "ok" in x && "ok" in y && sort && mode === 2 ? sameSorted(x.ok, y.ok, sort) : canonical(x) === canonical(y);
      if (!same) mismatch(label("find", { sort, skip, limit }), x, y);
      if (mode !== 0 && r.chance(0.25)) {
        const plan = await outcome(() =>
          a
            .db(dbName)
            .collection(name)
            .find(filter)
            .sort(sort as Sort)
            .explain(),
        );
        if ("ok" in plan) {
          if (plan.ok.filterPushdown) report.pushedFilters++;
          if (plan.ok.sortPushdown) report.pushedSorts++;
        }
      }
    } else if (p < 0.6) {
      count("countDocuments");
      const [x, y] = await both((coll) => coll.countDocuments(filter), name);
      if (canonical(x) !== canonical(y)) mismatch(label("countDocuments"), x, y);
    } else if (p < 0.65) {
      // Half of them in the form the patched FerretDB counts in SQL (string equalities and $in), which its field
      // kinds then decide: exact on fields that only held strings (and null), counted in Go on any other.
      const counted = r.chance(0.5) ? stringFilter(r, shape) : filter;
      count(counted === filter ? "count" : "count (string equalities)");
      const [x, y] = await Promise.all(
        [a, b].map((client) => outcome(() => client.db(dbName).command({ count: name, query: counted }))),
      );
      if (canonical(x) !== canonical(y)) mismatch(`count on ${name}: ${canonical({ filter: counted })}`, x, y);
    } else if (p < 0.69) {
      count("distinct");
      const field = r.pick(FIELDS);
      const [x, y] = await both((coll) => coll.distinct(field, filter), name);
      if (canonical(x) !== canonical(y)) mismatch(label("distinct", { field }), x, y);
    } else if (p < 0.73) {
      count("aggregate");
      const pipeline: Document[] = [{ $match: filter }, { $sort: randomSort(r, true) }, { $limit: 1 + r.int(10) }];
      const [x, y] = await both((coll) => coll.aggregate(pipeline).toArray(), name);
      if (canonical(x) !== canonical(y)) mismatch(label("aggregate", { pipeline }), x, y);
    } else if (p < 0.83) {
      const many = r.chance(0.4);
      const update = randomUpdate(r, shape);
      count(many ? "updateMany" : "updateOne");
      const [x, y] = await both(
        (coll) => (many ? coll.updateMany(filter, update) : coll.updateOne(filter, update)),
        name,
      );
      if (canonical(x) !== canonical(y)) mismatch(label(many ? "updateMany" : "updateOne", { update }), x, y);
    } else if (p < 0.88) {
      const update = randomUpdate(r, shape);
      const sort = r.chance(0.5) ? randomSort(r, true) : undefined;
      count("findOneAndUpdate");
      const [x, y] = await both(
        (coll) => coll.findOneAndUpdate(filter, update, { sort: sort as Sort, returnDocument: "after" }),
        name,
      );
      if (canonical(x) !== canonical(y)) mismatch(label("findOneAndUpdate", { update, sort }), x, y);
    } else if (p < 0.91) {
      const many = r.chance(0.3);
      count(many ? "deleteMany" : "deleteOne");
      const [x, y] = await both((coll) => (many ? coll.deleteMany(filter) : coll.deleteOne(filter)), name);
      if (canonical(x) !== canonical(y)) mismatch(label(many ? "deleteMany" : "deleteOne"), x, y);
    } else if (p < 0.97) {
      count("insertOne");
      const i = nextId[c] ?? 0;
      nextId[c] = i + 1;
      const doc = randomDoc(r, r.chance(0.97) ? shape : randomShape(r), randomId(r, shape, i));
      const [x, y] = await both((coll) => coll.insertOne(doc), name);
      if (canonical(x) !== canonical(y)) mismatch(`insertOne on ${name}: ${canonical(doc)}`, x, y);
    } else {
      count("upsert");
      const update = { $set: { [r.pick(FIELDS)]: operand(r, shape, r.pick(FIELDS)) } };
      const [x, y] = await both((coll) => coll.updateOne(filter, update, { upsert: true }), name);
      const strip = (o: typeof x) => ("ok" in o ? { ...o.ok, upsertedId: o.ok.upsertedId ? "id" : null } : o);
      if (canonical(strip(x)) !== canonical(strip(y))) mismatch(label("upsert", { update }), x, y);
      // an upserted document gets a new ObjectId on each server: give both the same _id
      if ("ok" in x && "ok" in y && x.ok.upsertedId && y.ok.upsertedId) {
        const _id = `u${report.operations}`;
        for (const [client, id] of [
          [a, x.ok.upsertedId],
          [b, y.ok.upsertedId],
        ] as const) {
          const coll = client.db(dbName).collection<{ _id: string | ObjectId }>(name);
          const doc = await coll.findOne({ _id: id });
          await coll.deleteOne({ _id: id });
          await coll.insertOne({ ...doc, _id });
        }
      }
    }

    // after writes, now and then: every collection's documents in insertion order
    if (r.chance(0.05)) {
      const [x, y] = await both((coll) => coll.find({}).toArray(), name);
      if (canonical(x) !== canonical(y)) mismatch(`documents of ${name}`, x, y);
    }
  }

  for (let c = 0; c < options.collections; c++) {
    const [x, y] = await both((coll) => coll.find({}).toArray(), `c${c}`);
    if (canonical(x) !== canonical(y)) mismatch(`final documents of c${c}`, x, y);
  }
  return report;
}
