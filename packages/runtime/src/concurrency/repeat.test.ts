import { repeat } from "./repeat.js";

const logger = { warn: jest.fn() };

beforeEach(() => {
  jest.useFakeTimers();
  logger.warn.mockClear();
});
afterEach(() => jest.useRealTimers());

describe("repeat", () => {
  it("runs every period, one run at a time, even when a run outlasts the period", async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const stop = repeat(
      async () => {
        runs++;
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        running--;
      },
      { what: "slow", everyMs: 1_000, logger },
    );
    await jest.advanceTimersByTimeAsync(999);
    expect(runs).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(runs).toBe(1);
    // 2.5 s of work, then the 1 s gap: the second run begins at 4.5 s.
    await jest.advanceTimersByTimeAsync(3_499);
    expect(runs).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(runs).toBe(2);
    expect(most).toBe(1);
    stop();
  });

  it("waits costFactor times the last run's length when that is longer than the period", async () => {
    const starts: number[] = [];
    const stop = repeat(
      async () => {
        starts.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      },
      { what: "costly", everyMs: 500, costFactor: 3, logger },
    );
    await jest.advanceTimersByTimeAsync(10_000);
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] ?? 0));
    expect(gaps.length).toBeGreaterThan(0);
    // Each run lasts 1 s and is followed by a 3 s gap.
    for (const gap of gaps) expect(gap).toBe(4_000);
    stop();
  });

  it("logs a failed run and goes on; stops when told", async () => {
    let runs = 0;
    const stop = repeat(
      async () => {
        runs++;
        throw new Error("boom");
      },
      { what: "flaky work", everyMs: 100, logger },
    );
    await jest.advanceTimersByTimeAsync(350);
    expect(runs).toBe(3);
    expect(logger.warn).toHaveBeenCalledWith({ err: expect.any(Error) }, "flaky work failed");
    stop();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(runs).toBe(3);
  });
});
