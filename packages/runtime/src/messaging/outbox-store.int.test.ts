import { randomUUID } from "node:crypto";
import { type Collection, MongoClient } from "mongodb";
import { createMongoOutboxStore, type OutboxDoc, type OutboxStore } from "./outbox.js";

// The outbox's MongoDB store against the stack's real MongoDB-wire server (FerretDB in the test stack).
let client: MongoClient;
let store: OutboxStore;
let collection: Collection<OutboxDoc>;
beforeAll(async () => {
  client = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  collection = client.db("conveyor_runtime_it").collection<OutboxDoc>(`outbox_${randomUUID().slice(0, 8)}`);
  store = await createMongoOutboxStore(collection);
});
afterAll(async () => {
  await collection.drop();
  await client.close();
});

const event = (n: number) => ({ subject: "ci.test.job", data: new TextEncoder().encode(`job-${n}`) });
const entry = (key: string, n: number) => ({ key, version: randomUUID(), at: new Date(), event: event(n) });

describe("the MongoDB outbox store", () => {
  it("records thousands of new entries in one insert, and removes them by key and version", async () => {
    const entries = Array.from({ length: 4_001 }, (_, i) => entry(`job:${randomUUID()}`, i));
    await store.recordMany(entries);
    expect(await collection.countDocuments({ _id: { $in: entries.map((e) => e.key) } })).toBe(4_001);
    const first = await store.get(entries[0]?.key ?? "");
    expect(first).toMatchObject({ key: entries[0]?.key, version: entries[0]?.version });
    expect(new TextDecoder().decode(first?.event?.data)).toBe("job-0");
    await store.removeMany(entries);
    expect(await collection.countDocuments({ _id: { $in: entries.map((e) => e.key) } })).toBe(0);
  });

  it("records again, as an upsert, an entry whose key stands already; the others are inserted", async () => {
    const standing = entry(`job:${randomUUID()}`, 1);
    await store.record(standing.key, standing.version, standing.at, standing.event);
    const again = { ...entry(standing.key, 2) };
    const fresh = entry(`job:${randomUUID()}`, 3);
    await store.recordMany([fresh, again]);
    expect(await store.get(standing.key)).toMatchObject({ version: again.version });
    expect(new TextDecoder().decode((await store.get(standing.key))?.event?.data)).toBe("job-2");
    expect(await store.get(fresh.key)).toMatchObject({ version: fresh.version });
  });

  it("keeps an entry recorded again since (another version) when removing many", async () => {
    const a = entry(`job:${randomUUID()}`, 1);
    const b = entry(`job:${randomUUID()}`, 2);
    await store.recordMany([a, b]);
    const bAgain = entry(b.key, 3);
    await store.record(bAgain.key, bAgain.version, bAgain.at, bAgain.event);
    await store.removeMany([a, b]);
    expect(await store.get(a.key)).toBeNull();
    expect(await store.get(b.key)).toMatchObject({ version: bAgain.version });
  });
});
