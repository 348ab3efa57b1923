import {
  MAX_QUICK_DEATHS,
  MAX_RESTART_DELAY_MS,
  nextRestart,
  quickDeaths,
  RESTART_DELAY_MS,
  recentLives,
  STABLE_AFTER_MS,
} from "./restart-policy.js";

const quick = (at: number) => ({ startedAt: at, endedAt: at + 1_000 });
const healthy = (at: number) => ({ startedAt: at, endedAt: at + STABLE_AFTER_MS + 1 });

describe("the restart policy", () => {
  it("restarts after the first pause when the process ran long enough to be healthy", () => {
    expect(nextRestart([healthy(0)])).toEqual({ kind: "restart", delayMs: RESTART_DELAY_MS, quickDeaths: 0 });
    // Quick deaths before a healthy run no longer count.
    expect(nextRestart([quick(0), quick(1), quick(2), quick(3), healthy(4)])).toMatchObject({
      delayMs: RESTART_DELAY_MS,
    });
  });

  it("doubles the pause with each quick death in a row, up to the longest pause", () => {
    expect(nextRestart([quick(0)])).toMatchObject({ kind: "restart", delayMs: 2 * RESTART_DELAY_MS });
    expect(nextRestart([quick(0), quick(1)])).toMatchObject({ delayMs: 4 * RESTART_DELAY_MS });
    const many = Array.from({ length: 20 }, (_, i) => quick(i));
    expect(nextRestart(many, { giveUp: false })).toMatchObject({ kind: "restart", delayMs: MAX_RESTART_DELAY_MS });
  });

  it("gives up after five quick deaths in a row, and says why", () => {
    const lives = Array.from({ length: MAX_QUICK_DEATHS }, (_, i) => quick(i));
    const decision = nextRestart(lives);
    expect(decision).toMatchObject({ kind: "give-up", quickDeaths: MAX_QUICK_DEATHS });
    expect(decision.kind === "give-up" && decision.reason).toBe("it died 5 times in a row within 10 s of starting");
    expect(nextRestart(lives.slice(1))).toMatchObject({ kind: "restart" });
  });

  it("never gives up for a replica set", () => {
    const lives = Array.from({ length: 50 }, (_, i) => quick(i));
    expect(nextRestart(lives, { giveUp: false }).kind).toBe("restart");
  });

  it("counts quick deaths back from the last life only", () => {
    expect(quickDeaths([])).toBe(0);
    expect(quickDeaths([quick(0), healthy(1), quick(2), quick(3)])).toBe(2);
    expect(quickDeaths([healthy(0)])).toBe(0);
  });

  it("keeps only the lives that can change a decision", () => {
    const lives = Array.from({ length: 30 }, (_, i) => quick(i));
    expect(recentLives(lives)).toHaveLength(MAX_QUICK_DEATHS + 1);
    expect(nextRestart(recentLives(lives)).kind).toBe(nextRestart(lives).kind);
    expect(nextRestart(recentLives(lives), { giveUp: false })).toMatchObject({
      delayMs: MAX_RESTART_DELAY_MS,
    });
  });
});
