import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { createLogger, createMemoryOutboxStore, decodeEvent, type RawPublish } from "@conveyor/runtime";
import type { BuildRepository } from "../store/build-repository.js";
import { countsKey, createPipelineCounters } from "./pipeline-counters.js";

const zero = { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 };

function setup() {
  let clock = new Date("2026-01-01T00:00:00Z");
  const state = { down: false, counts: { ...zero }, published: [] as Array<{ msgID: string; scheduled: number }> };
  const publish: RawPublish = async (_subject, data, msgID) => {
    if (state.down) throw new Error("NATS is down");
    state.published.push({ msgID, scheduled: decodeEvent(PipelineCountsChangedSchema, data).scheduledBuilds });
  };
  const store = createMemoryOutboxStore();
  let records = 0;
  const counted = {
    ...store,
    record(...args: Parameters<typeof store.record>) {
      records++;
      return store.record(...args);
    },
  };
  const ctx = createPipelineCounters({
    repo: { pipelineCounts: async () => ({ ...state.counts }) } as unknown as BuildRepository,
    events: { publish: async () => {} },
    outbox: { store: counted, publish },
    logger: createLogger("test", "silent"),
    now: () => clock,
  });
  const advance = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };
  return { ctx, state, store, advance, records: () => records };
}

describe("pipeline counters through the outbox", () => {
  it("records a pipeline once while its entry stands, announces it, and leaves nothing behind", async () => {
    const { ctx, state, store, records } = setup();
    await ctx.markCounts("p");
    await ctx.markCounts("p");
    expect(records()).toBe(1);
    state.counts.scheduledBuilds = 1;
    ctx.publishCounts("p");
    await ctx.countsIdle();
    expect(state.published.map((m) => m.scheduled)).toEqual([1]);
    expect(state.published[0]?.msgID.startsWith(`${countsKey("p")}:`)).toBe(true);
    expect(store.docs.size).toBe(0);
    // After an announcement began, the next change records again.
    await ctx.markCounts("p");
    expect(records()).toBe(2);
  });

  it("keeps the entry when the announcement fails, and the relay announces the counters as they are then", async () => {
    const { ctx, state, store, advance } = setup();
    state.down = true;
    await ctx.markCounts("p");
    state.counts.runningBuilds = 1;
    ctx.publishCounts("p");
    await ctx.countsIdle();
    expect(store.docs.has(countsKey("p"))).toBe(true);

    state.down = false;
    state.counts = { ...zero };
    advance(1_000);
    expect(await ctx.outbox.relay()).toBe(0); // within the grace
    advance(5_000);
    expect(await ctx.outbox.relay()).toBe(1);
    expect(state.published).toEqual([expect.objectContaining({ scheduled: 0 })]);
    expect(store.docs.size).toBe(0);
  });

  it("re-announces a pipeline with no entry (the periodic sweep) without recording one", async () => {
    const { ctx, state, store, records } = setup();
    ctx.publishCounts("p");
    await ctx.countsIdle();
    expect(state.published).toHaveLength(1);
    expect(records()).toBe(0);
    expect(store.docs.size).toBe(0);
  });

  it("remembers which pipelines' counters were asked for since when, most recent first", async () => {
    const { ctx, advance } = setup();
    const since = (minutesAgo: number) =>
      new Date(Date.parse("2026-01-01T00:00:00Z") + 11 * 60_000 - minutesAgo * 60_000);
    ctx.publishCounts("a");
    advance(5 * 60_000);
    ctx.publishCounts("b");
    ctx.publishCounts("c");
    advance(6 * 60_000);
    await ctx.countsIdle();
    // Now 11 minutes after "a", 6 after "b" and "c".
    expect(ctx.countedSince(since(10))).toEqual(["c", "b"]);
    expect(ctx.countedSince(since(12))).toEqual(["c", "b", "a"]);
    expect(ctx.countedSince(since(1))).toEqual([]);
    // Announced again (republishCounts) is not a change: "a" stays as old as its last change.
    ctx.reannounceCounts(["a", "b"]);
    await ctx.countsIdle();
    expect(ctx.countedSince(since(10))).toEqual(["c", "b"]);
    ctx.publishCounts("a");
    expect(ctx.countedSince(since(10))).toEqual(["a", "c", "b"]);
  });
});
