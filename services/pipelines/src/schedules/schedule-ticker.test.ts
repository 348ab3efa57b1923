import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger } from "@conveyor/runtime";
import { createMemoryScheduleRepository } from "../store/memory-schedule-repository.js";
import type { PipelineDoc } from "../store/pipelines-repository.js";
import { tickKey } from "../store/schedule-repository.js";
import { aSchedule } from "../test-support.js";
import { createScheduleTicker, type ScheduleTickerDeps } from "./schedule-ticker.js";

const T0 = new Date("2026-03-01T10:00:00.000Z");
const logger = createLogger("schedule-ticker-test", "silent");

/** The world a ticker works in: schedules in memory, one pipeline, a builds service that records its calls. */
function world(opts: { pipeline?: Partial<PipelineDoc> | null; refuse?: ConnectError } = {}) {
  const memory = createMemoryScheduleRepository();
  const calls: Array<Record<string, unknown>> = [];
  let clock = new Date(T0.getTime() + 2_000);
  const pipeline = opts.pipeline === null ? null : ({ _id: "p-1", archivedAt: null, ...opts.pipeline } as PipelineDoc);
  const deps: ScheduleTickerDeps = {
    schedules: memory.repo,
    pipelines: { find: async (_org, id) => (pipeline && id === pipeline._id ? pipeline : null) },
    builds: {
      createBuild: (async (req: Record<string, unknown>) => {
        // A creation takes a while, as a call to another service does: racing tickers overlap here.
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (opts.refuse) throw opts.refuse;
        calls.push(req);
        return { build: { id: `b-${calls.length}` } };
      }) as unknown as ScheduleTickerDeps["builds"]["createBuild"],
    },
    logger,
    now: () => clock,
  };
  return {
    ...memory,
    calls,
    deps,
    ticker: () => createScheduleTicker(deps),
    setClock: (iso: string) => {
      clock = new Date(iso);
    },
    stored: (id = "s-1") => {
      const s = memory.schedules.get(id);
      if (!s) throw new Error(`no schedule ${id}`);
      return s;
    },
  };
}

describe("the schedule ticker", () => {
  it("creates one build for a due tick, with the schedule's fields and source schedule, and moves it on", async () => {
    const w = world();
    await w.repo.insert(aSchedule());
    expect(await w.ticker().pass()).toEqual({ built: 1, failed: 0, taken: 0 });
    expect(w.calls).toEqual([
      expect.objectContaining({
        pipelineId: "p-1",
        organizationId: "o-1",
        organizationSlug: "acme",
        commit: "HEAD",
        branch: "main",
        message: "Scheduled",
        env: { NIGHTLY: "1" },
        source: "schedule",
      }),
    ]);
    expect(w.stored().nextBuildAt?.toISOString()).toBe("2026-03-01T11:00:00.000Z");
    expect(w.ticks.get(tickKey("s-1", T0))?.buildId).toBe("b-1");
  });

  it("leaves schedules that are not due, or disabled, alone", async () => {
    const w = world();
    await w.repo.insert(aSchedule({ _id: "later", nextBuildAt: new Date("2026-03-01T11:00:00Z") }));
    await w.repo.insert(aSchedule({ _id: "off", enabled: false }));
    expect(await w.ticker().pass()).toEqual({ built: 0, failed: 0, taken: 0 });
    expect(w.calls).toHaveLength(0);
  });

  it("creates exactly one build when two tickers (two replicas) race for the same ticks", async () => {
    const w = world();
    for (let i = 0; i < 20; i++) await w.repo.insert(aSchedule({ _id: `s-${i}` }));
    const [a, b] = [w.ticker(), w.ticker()];
    const passes = await Promise.all([a.pass(), b.pass(), a.pass(), b.pass()]);
    expect(w.calls).toHaveLength(20);
    expect(passes.reduce((n, p) => n + p.built, 0)).toBe(20);
    for (let i = 0; i < 20; i++) expect(w.stored(`s-${i}`).nextBuildAt?.toISOString()).toBe("2026-03-01T11:00:00.000Z");
    // And again later: a restarted ticker finds nothing left to build for those ticks.
    expect(await w.ticker().pass()).toEqual({ built: 0, failed: 0, taken: 0 });
  });

  it("builds ticks missed while the stack was down once, then goes on from now", async () => {
    const w = world();
    await w.repo.insert(aSchedule());
    w.setClock("2026-03-01T13:30:00.000Z");
    expect((await w.ticker().pass()).built).toBe(1);
    expect(await w.ticker().pass()).toEqual({ built: 0, failed: 0, taken: 0 });
    expect(w.calls).toHaveLength(1);
    expect(w.stored().nextBuildAt?.toISOString()).toBe("2026-03-01T14:00:00.000Z");
  });

  it("records failed_message and failed_at for an archived pipeline, and keeps its next tick", async () => {
    const w = world({ pipeline: { archivedAt: T0 } });
    await w.repo.insert(aSchedule());
    expect((await w.ticker().pass()).failed).toBe(1);
    expect(w.calls).toHaveLength(0);
    expect(w.stored()).toMatchObject({
      failedMessage: "Pipeline is archived: unarchive it to build on schedule again.",
      failedAt: new Date(T0.getTime() + 2_000),
      enabled: true,
      nextBuildAt: new Date("2026-03-01T11:00:00.000Z"),
    });
  });

  it("records a deleted pipeline and stops the schedule", async () => {
    const w = world({ pipeline: null });
    await w.repo.insert(aSchedule());
    expect((await w.ticker().pass()).failed).toBe(1);
    expect(w.stored()).toMatchObject({ failedMessage: "The pipeline was deleted.", enabled: false, nextBuildAt: null });
  });

  it("records the builds service's refusal and moves on to the next tick", async () => {
    const w = world({ refuse: new ConnectError("Pipeline is archived", Code.FailedPrecondition) });
    await w.repo.insert(aSchedule());
    expect((await w.ticker().pass()).failed).toBe(1);
    expect(w.stored()).toMatchObject({
      failedMessage: "Pipeline is archived",
      nextBuildAt: new Date("2026-03-01T11:00:00Z"),
    });
  });

  it("clears a recorded failure once a tick builds", async () => {
    const w = world();
    await w.repo.insert(aSchedule({ failedMessage: "earlier", failedAt: T0 }));
    await w.ticker().pass();
    expect(w.stored()).toMatchObject({ failedMessage: null, failedAt: null });
  });

  it("reports a tick whose claimer stopped before recording a build, after the lease, instead of building twice", async () => {
    const w = world();
    await w.repo.insert(aSchedule());
    // A ticker claimed the tick at T0 + 1 s and stopped.
    expect(await w.repo.claimTick("s-1", T0, new Date(T0.getTime() + 1_000))).toBe(true);
    expect(await w.ticker().pass()).toEqual({ built: 0, failed: 0, taken: 1 });
    expect(w.stored().nextBuildAt).toEqual(T0);
    w.setClock("2026-03-01T10:05:00.000Z");
    await w.ticker().pass();
    expect(w.calls).toHaveLength(0);
    expect(w.stored().failedMessage).toMatch(/may not have been created: the scheduler stopped/);
    expect(w.stored().nextBuildAt?.toISOString()).toBe("2026-03-01T11:00:00.000Z");
  });

  it("moves on a schedule whose claimer made the build but stopped before moving it on", async () => {
    const w = world();
    await w.repo.insert(aSchedule());
    await w.repo.claimTick("s-1", T0, T0);
    await w.repo.completeTick("s-1", T0, "b-0");
    await w.ticker().pass();
    expect(w.calls).toHaveLength(0);
    expect(w.stored().nextBuildAt?.toISOString()).toBe("2026-03-01T11:00:00.000Z");
  });

  it("keeps an owner's change made while a tick was handled", async () => {
    const w = world();
    await w.repo.insert(aSchedule());
    const changed = new Date("2026-03-02T00:00:00Z");
    const createBuild = w.deps.builds.createBuild;
    w.deps.builds.createBuild = (async (...args: Parameters<typeof createBuild>) => {
      await w.repo.update("p-1", "s-1", { cronline: "@daily", nextBuildAt: changed });
      return createBuild(...args);
    }) as typeof createBuild;
    await w.ticker().pass();
    expect(w.calls).toHaveLength(1);
    expect(w.stored()).toMatchObject({ cronline: "@daily", nextBuildAt: changed });
  });
});
