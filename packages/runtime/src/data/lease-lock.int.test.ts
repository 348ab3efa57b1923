import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Collection, type Db, MongoClient } from "mongodb";
import { createLeaseLock, type LeaseDoc } from "./lease-lock.js";

// Against the stack's MongoDB-wire server: two lease locks over one collection stand for two processes.
let mongo: MongoClient;
let db: Db;
let leases: Collection<LeaseDoc>;
beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(`it_lease_${Date.now()}`);
  leases = db.collection<LeaseDoc>("locks");
});
afterAll(async () => {
  await db.dropDatabase();
  await mongo.close();
});

describe("createLeaseLock", () => {
  it("lets one holder at a time run per key across processes, so a read-check-write loses nothing", async () => {
    const processes = [createLeaseLock(leases), createLeaseLock(leases)];
    const counters = db.collection<{ _id: string; n: number }>("counters");
    await counters.insertOne({ _id: "c", n: 0 });
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        processes[i % 2]?.("counter", async () => {
          inside++;
          most = Math.max(most, inside);
          const doc = await counters.findOne({ _id: "c" });
          await sleep(5);
          await counters.updateOne({ _id: "c" }, { $set: { n: (doc?.n ?? 0) + 1 } });
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect((await counters.findOne({ _id: "c" }))?.n).toBe(12);
    expect(await leases.countDocuments({})).toBe(0);
  });

  it("takes over a holding whose process died once its lease lapsed, and not before", async () => {
    await leases.insertOne({ _id: "dead", holder: "gone", until: new Date(Date.now() - 1) });
    const lock = createLeaseLock(leases, { waitMs: 2_000 });
    expect(await lock("dead", async () => "ran")).toBe("ran");

    await leases.insertOne({ _id: "held", holder: "alive", until: new Date(Date.now() + 60_000) });
    const impatient = createLeaseLock(leases, { waitMs: 200 });
    let ran = false;
    const err = await impatient("held", async () => {
      ran = true;
    }).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.Unavailable);
    expect(ran).toBe(false);
    expect((await leases.findOne({ _id: "held" }))?.holder).toBe("alive");
  });

  it("releases the key when the work fails", async () => {
    const lock = createLeaseLock(leases);
    await expect(lock("failing", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await leases.findOne({ _id: "failing" })).toBeNull();
  });
});
