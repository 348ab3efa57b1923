import { createCoalescer } from "./coalesce.js";

/** A work function whose runs the test finishes by hand. */
function controlled() {
  const runs: Array<{ key: string; finish: () => void }> = [];
  const work = (key: string) =>
    new Promise<void>((resolve) => {
      runs.push({ key, finish: resolve });
    });
  return { runs, work };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("createCoalescer", () => {
  it("runs at once when nothing runs for the key", async () => {
    const { runs, work } = controlled();
    const c = createCoalescer(work);
    c.request("p1");
    expect(runs.map((r) => r.key)).toEqual(["p1"]);
    runs[0]?.finish();
    await c.idle();
  });

  it("turns any number of requests during a run into exactly one more run", async () => {
    const { runs, work } = controlled();
    const c = createCoalescer(work);
    c.request("p1");
    for (let i = 0; i < 10; i++) c.request("p1");
    expect(runs).toHaveLength(1);
    runs[0]?.finish();
    await tick();
    expect(runs).toHaveLength(2);
    runs[1]?.finish();
    await c.idle();
    expect(runs).toHaveLength(2);
  });

  it("runs different keys independently", async () => {
    const { runs, work } = controlled();
    const c = createCoalescer(work);
    c.request("p1");
    c.request("p2");
    c.request("p1");
    expect(runs.map((r) => r.key)).toEqual(["p1", "p2"]);
    runs[1]?.finish();
    await tick();
    expect(runs).toHaveLength(2);
    runs[0]?.finish();
    await tick();
    expect(runs.map((r) => r.key)).toEqual(["p1", "p2", "p1"]);
    runs[2]?.finish();
    await c.idle();
  });

  it("goes on after a failed run, and idle() waits for every key", async () => {
    const seen: string[] = [];
    let fail = true;
    const warned: string[] = [];
    const logger = { warn: (_obj: unknown, msg: string) => warned.push(msg) };
    const c = createCoalescer(
      async (key) => {
        seen.push(key);
        await tick();
        if (fail) {
          fail = false;
          throw new Error("database away");
        }
      },
      { logger: logger as never },
    );
    c.request("p1");
    c.request("p1");
    c.request("p2");
    await c.idle();
    expect(seen.sort()).toEqual(["p1", "p1", "p2"]);
    expect(warned).toEqual(["a coalesced run failed"]);
    await expect(c.idle()).resolves.toBeUndefined();
  });

  it("a request after a run finished starts a new run", async () => {
    let count = 0;
    const c = createCoalescer(async () => {
      count++;
    });
    c.request("p1");
    await c.idle();
    c.request("p1");
    await c.idle();
    expect(count).toBe(2);
  });
});

describe("createCoalescer when a run throws", () => {
  it("logs the failure with its key and runs the key again when asked", async () => {
    const warnings: Array<{ obj: unknown; msg: string }> = [];
    const logger = { warn: (obj: unknown, msg: string) => warnings.push({ obj, msg }) };
    const failure = new Error("recount failed");
    let runs = 0;
    const c = createCoalescer(
      async () => {
        runs++;
        if (runs === 1) throw failure;
      },
      { logger: logger as never },
    );
    c.request("p1");
    await c.idle();
    expect(warnings).toEqual([{ obj: { err: failure, key: "p1" }, msg: "a coalesced run failed" }]);
    c.request("p1");
    await c.idle();
    expect(runs).toBe(2);
    expect(warnings).toHaveLength(1);
  });
});

describe("createCoalescer with a gap", () => {
  it("starts the run asked for during a run only the gap after it, from the run's length", async () => {
    jest.useFakeTimers({ doNotFake: ["setImmediate", "performance"] });
    try {
      const { runs, work } = controlled();
      const lengths: number[] = [];
      const c = createCoalescer(work, {
        gapMs: (ms) => {
          lengths.push(ms);
          return 1_000;
        },
      });
      c.request("p1");
      c.request("p1");
      runs[0]?.finish();
      await tick();
      expect(runs).toHaveLength(1);
      expect(lengths).toHaveLength(1);
      // Requests during the gap still ask for that one run.
      c.request("p1");
      await jest.advanceTimersByTimeAsync(999);
      expect(runs).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(runs).toHaveLength(2);
      runs[1]?.finish();
      await c.idle();
      // Nothing was asked for during the second run: no gap, no third run.
      expect(lengths).toHaveLength(1);
      expect(runs).toHaveLength(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
