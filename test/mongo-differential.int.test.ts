import { MongoClient } from "mongodb";
import { runDifferential } from "./mongo-differential.js";
import { type FerretDbProcess, ferretDbOracle, startFerretDb } from "./support/ferretdb.js";
import { itRequires } from "./support/not-run.js";

// The stack's FerretDB (with deploy/ferretdb's pushdown patches) against the same binary started with
// --test-disable-pushdown, which reads every document and evaluates filters and sorts in Go: random documents of
// every type, random indexes, and random finds, counts, distincts, aggregations, updates, upserts and deletes must
// get the same answers from both. Seeded and bounded in time; a longer or other run:
//   MONGO_DIFF_SEED=7 MONGO_DIFF_SECONDS=600 npx jest --selectProjects stack --testPathPatterns mongo-differential
// With another MongoDB-wire server there is nothing to compare: the test is reported as not run (support/not-run.ts).
const SEED = Number(process.env.MONGO_DIFF_SEED ?? 20261115);
const SECONDS = Number(process.env.MONGO_DIFF_SECONDS ?? 35);
const OPERATIONS = Number(process.env.MONGO_DIFF_OPERATIONS ?? 100_000);
const dbName = `it_differential_${Date.now()}`;
const oracleNeeded = ferretDbOracle();
const itWithOracle = itRequires(oracleNeeded);

let mongo: MongoClient;
let oracle: FerretDbProcess | undefined;
let oracleClient: MongoClient;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  // Without the precondition the test below does not run: there is no oracle to start.
  if (oracleNeeded.missing !== undefined) return;
  oracle = await startFerretDb(oracleNeeded.bin, true);
  oracleClient = await new MongoClient(oracle.url).connect();
}, 30_000);

afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
  await oracleClient?.close();
  await oracle?.stop();
});

describe("the bundled FerretDB's pushdown", () => {
  itWithOracle(
    "answers random operations on random documents exactly as FerretDB's own evaluation does",
    async () => {
      const started = Date.now();
      const report = await runDifferential(mongo, oracleClient, dbName, {
        seed: SEED,
        operations: OPERATIONS,
        deadline: started + SECONDS * 1000,
        collections: 3,
        docsPerCollection: 150,
      });
      process.stderr.write(
        `[mongo-differential] seed ${SEED}: ${report.operations} operations in ` +
          `${((Date.now() - started) / 1000).toFixed(1)} s, ${report.mismatches.length} mismatches; ` +
          `explained finds with filter pushdown ${report.pushedFilters}, sort pushdown ${report.pushedSorts}; ` +
          `${JSON.stringify(report.byKind)}\n`,
      );
      expect(report.mismatches).toEqual([]);
      expect(report.operations).toBeGreaterThan(Math.min(OPERATIONS, 100));
      expect(report.pushedFilters).toBeGreaterThan(0);
      expect(report.pushedSorts).toBeGreaterThan(0);
    },
    SECONDS * 1000 + 60_000,
  );
});
