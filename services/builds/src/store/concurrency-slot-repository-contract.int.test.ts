import { MongoClient } from "mongodb";
import { type ConcurrencySlotRepository, createMongoConcurrencySlotRepository } from "./concurrency-slot-repository.js";
import { createMemoryConcurrencySlotRepository } from "./memory-concurrency-slot-repository.js";

// The ConcurrencySlotRepository contract, one set of cases run against the MongoDB implementation over the real
// MongoDB-wire server and against the in-memory one (testing.ts): one holder per (organization, group, slot).
let mongo: MongoClient;
const dbName = `it_slot_contract_${Date.now()}`;
let databases = 0;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  for (let i = 1; i <= databases; i++) await mongo.db(`${dbName}_${i}`).dropDatabase();
  await mongo.close();
});

const implementations: Array<[string, () => Promise<ConcurrencySlotRepository>]> = [
  ["on MongoDB", () => createMongoConcurrencySlotRepository(mongo.db(`${dbName}_${++databases}`))],
  ["in memory", async () => createMemoryConcurrencySlotRepository()],
];

const at = new Date("2026-03-01T10:00:00.000Z");

describe.each(implementations)("the ConcurrencySlotRepository %s", (_name, make) => {
  it("hands a slot to one job at a time, per organization and group, and frees it only for its holder", async () => {
    const slots = await make();
    expect(await slots.take("o-1", "deploy", 0, "j-1", at)).toBe(true);
    expect(await slots.take("o-1", "deploy", 0, "j-2", at)).toBe(false);
    expect(await slots.take("o-1", "deploy", 1, "j-2", at)).toBe(true);
    expect(await slots.take("o-2", "deploy", 0, "j-3", at)).toBe(true);
    expect(await slots.take("o-1", "test", 0, "j-4", at)).toBe(true);
    const held = async () => (await slots.slotsOf("o-1", "deploy")).sort((a, b) => a.slot - b.slot);
    expect(await held()).toEqual([
      { slot: 0, jobId: "j-1", takenAt: at },
      { slot: 1, jobId: "j-2", takenAt: at },
    ]);

    await slots.release("o-1", "deploy", 0, "j-2");
    expect((await held()).map((s) => s.jobId)).toEqual(["j-1", "j-2"]);
    await slots.release("o-1", "deploy", 0, "j-1");
    expect((await held()).map((s) => s.jobId)).toEqual(["j-2"]);
    expect(await slots.take("o-1", "deploy", 0, "j-5", at)).toBe(true);
  });
});
