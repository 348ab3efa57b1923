import { createBarrierTimeouts } from "./barrier-timeouts.js";

describe("barrier timeouts", () => {
  it("warns at the first, then at most once per period with what gave up since and the most the reader was behind", () => {
    const t = createBarrierTimeouts(10_000);
    expect(t.gaveUp(1_000, 3)).toEqual({ timedOut: 1, mostBehind: 3, sinceMs: 1_000 });
    expect(t.gaveUp(2_000, 40)).toBeUndefined();
    expect(t.gaveUp(5_000, 7)).toBeUndefined();
    expect(t.gaveUp(11_000, 2)).toEqual({ timedOut: 3, mostBehind: 40, sinceMs: 2_000 });
    expect(t.gaveUp(12_000, 1)).toBeUndefined();
    expect(t.total()).toBe(5);
  });

  it("starts a new count after a warning, from the next read that gives up", () => {
    const t = createBarrierTimeouts(1_000);
    t.gaveUp(0, 1);
    expect(t.gaveUp(5_000, 9)).toEqual({ timedOut: 1, mostBehind: 9, sinceMs: 5_000 });
  });
});
