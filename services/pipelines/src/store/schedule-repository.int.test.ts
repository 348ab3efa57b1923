import { randomUUID } from "node:crypto";
import { createLogger } from "@conveyor/runtime";
import { MongoClient } from "mongodb";
import { createScheduleTicker, type ScheduleTickerDeps } from "../schedules/schedule-ticker.js";
import { aSchedule } from "../test-support.js";
import type { PipelineDoc } from "./pipelines-repository.js";
import { createMongoScheduleRepository, type ScheduleRepository, tickKey } from "./schedule-repository.js";

// The schedule repository against the stack's real MongoDB-wire server, in a throwaway database: CRUD, the due query,
// the unique tick claim, the compare-and-set that moves a schedule on, and two tickers (as two replicas, each with its
// own connection) racing over the same schedules creating each tick's build once.
const dbName = `it_schedules_${Date.now()}`;
const clients: MongoClient[] = [];
let repo: ScheduleRepository;
const T0 = new Date("2026-03-01T10:00:00.000Z");

async function connect(): Promise<ScheduleRepository> {
  const client = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  clients.push(client);
  return createMongoScheduleRepository(client.db(dbName));
}

beforeAll(async () => {
  repo = await connect();
});
afterAll(async () => {
  await clients[0]?.db(dbName).dropDatabase();
  await Promise.all(clients.map((c) => c.close()));
});

describe("the schedule repository", () => {
  it("stores, finds, lists oldest first, counts, updates and deletes a pipeline's schedules", async () => {
    const pipelineId = randomUUID();
    const first = aSchedule({ _id: randomUUID(), pipelineId, createdAt: new Date("2026-01-01T00:00:00Z") });
    const second = aSchedule({ _id: randomUUID(), pipelineId, createdAt: new Date("2026-01-02T00:00:00Z") });
    await repo.insert(second);
    await repo.insert(first);
    expect(await repo.find(pipelineId, first._id)).toEqual(first);
    expect(await repo.find(randomUUID(), first._id)).toBeNull();
    const page = await repo.list(pipelineId, 0, 1);
    expect(page.total).toBe(2);
    expect(page.items.map((s) => s._id)).toEqual([first._id]);
    expect(await repo.count(pipelineId)).toBe(2);
    expect((await repo.update(pipelineId, first._id, { label: "Renamed" }))?.label).toBe("Renamed");
    expect(await repo.update(randomUUID(), first._id, { label: "x" })).toBeNull();
    expect(await repo.delete(pipelineId, first._id)).toBe(true);
    expect(await repo.delete(pipelineId, first._id)).toBe(false);
    expect(await repo.count(pipelineId)).toBe(1);
  });

  it("finds enabled schedules that are due, the longest due first", async () => {
    const pipelineId = randomUUID();
    const ids = { late: randomUUID(), early: randomUUID(), future: randomUUID(), off: randomUUID() };
    await repo.insert(aSchedule({ _id: ids.late, pipelineId, nextBuildAt: new Date("2026-03-01T09:00:00Z") }));
    await repo.insert(aSchedule({ _id: ids.early, pipelineId, nextBuildAt: new Date("2026-03-01T08:00:00Z") }));
    await repo.insert(aSchedule({ _id: ids.future, pipelineId, nextBuildAt: new Date("2026-03-01T11:00:00Z") }));
    await repo.insert(aSchedule({ _id: ids.off, pipelineId, enabled: false, nextBuildAt: null }));
    const due = (await repo.due(T0, 1000)).filter((s) => s.pipelineId === pipelineId).map((s) => s._id);
    expect(due).toEqual([ids.early, ids.late]);
  });

  it("lets exactly one caller claim a tick, and moves a schedule on only from the tick it is at", async () => {
    const s = aSchedule({ _id: randomUUID(), pipelineId: randomUUID() });
    await repo.insert(s);
    const others = await Promise.all([connect(), connect()]);
    const claims = await Promise.all([repo, ...others].map((r) => r.claimTick(s._id, T0, T0)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    await repo.completeTick(s._id, T0, "b-1");
    expect((await repo.findTick(s._id, T0))?.buildId).toBe("b-1");
    const outcome = { nextBuildAt: new Date("2026-03-01T11:00:00Z"), failedMessage: null, failedAt: null };
    expect(await repo.advance(s._id, new Date("2026-03-01T09:00:00Z"), outcome)).toBe(false);
    expect(await repo.advance(s._id, T0, outcome)).toBe(true);
    expect(await repo.advance(s._id, T0, outcome)).toBe(false);
  });

  it("forgets a schedule's earlier ticks once a later one is complete, and all of them with the schedule", async () => {
    const s = aSchedule({ _id: randomUUID(), pipelineId: randomUUID() });
    await repo.insert(s);
    const later = new Date("2026-03-01T11:00:00Z");
    await repo.claimTick(s._id, T0, T0);
    await repo.claimTick(s._id, later, later);
    await repo.completeTick(s._id, later, null);
    expect(await repo.findTick(s._id, T0)).toBeNull();
    expect((await repo.findTick(s._id, later))?._id).toBe(tickKey(s._id, later));
    await repo.delete(s.pipelineId, s._id);
    expect(await repo.findTick(s._id, later)).toBeNull();
  });

  it("creates each tick's build once when two tickers on their own connections race", async () => {
    const pipelineId = randomUUID();
    const ids = Array.from({ length: 10 }, () => randomUUID());
    for (const id of ids) await repo.insert(aSchedule({ _id: id, pipelineId }));
    const built: string[] = [];
    const ticker = async () =>
      createScheduleTicker({
        schedules: await connect(),
        pipelines: { find: async () => ({ _id: pipelineId, archivedAt: null }) as PipelineDoc },
        builds: {
          createBuild: (async (req: { pipelineId: string }) => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            built.push(req.pipelineId);
            return { build: { id: randomUUID() } };
          }) as unknown as ScheduleTickerDeps["builds"]["createBuild"],
        },
        logger: createLogger("schedule-it", "silent"),
        now: () => new Date(T0.getTime() + 1_000),
      });
    const [a, b] = await Promise.all([ticker(), ticker()]);
    await Promise.all([a.pass(), b.pass(), a.pass(), b.pass()]);
    // Schedules of the other cases are due too, and built once each as well: count this pipeline's.
    expect(built.filter((id) => id === pipelineId)).toHaveLength(ids.length);
    for (const id of ids) {
      expect((await repo.find(pipelineId, id))?.nextBuildAt?.toISOString()).toBe("2026-03-01T11:00:00.000Z");
      expect((await repo.findTick(id, T0))?.buildId).toEqual(expect.any(String));
    }
  });
});
