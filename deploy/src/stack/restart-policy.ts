/**
 * When the launcher starts a process that died again, and when it gives up: the rule the single-process stack's
 * supervisor (supervisor.ts) and the replica sets (replicas.ts) share. Pure: it sees only the process's recent
 * history. docs/operations.md#a-process-dies describes it for operators.
 */

/** The first pause before a process that died is started again; it doubles while the process keeps dying quickly. */
export const RESTART_DELAY_MS = 500;
/** The longest pause between two restarts. */
export const MAX_RESTART_DELAY_MS = 30_000;
/** A process that ran this long before it died was healthy: its next restart comes after the first pause again. */
export const STABLE_AFTER_MS = 10_000;
/** After this many quick deaths in a row (each within STABLE_AFTER_MS of its start), the supervisor gives up. */
export const MAX_QUICK_DEATHS = 5;

/** One life of a process: when it was started and when it exited (or failed to start). */
export interface Life {
  startedAt: number;
  endedAt: number;
}

export type RestartDecision =
  | { kind: "restart"; delayMs: number; quickDeaths: number }
  | { kind: "give-up"; quickDeaths: number; reason: string };

/** How many of the most recent lives, counted back from the last, each ended within STABLE_AFTER_MS of its start. */
export function quickDeaths(lives: readonly Life[]): number {
  let n = 0;
  for (let i = lives.length - 1; i >= 0; i--) {
    const life = lives[i] as Life;
    if (life.endedAt - life.startedAt >= STABLE_AFTER_MS) break;
    n++;
  }
  return n;
}

/**
 * What to do after a process's last life ended: start it again after a pause (0.5 s after a healthy run; doubling
 * with each quick death in a row, up to 30 s), or give up once it died quickly MAX_QUICK_DEATHS times in a row
 * (`giveUp: false` never gives up: a replica set keeps trying, as a Deployment does).
 */
export function nextRestart(lives: readonly Life[], options: { giveUp: boolean } = { giveUp: true }): RestartDecision {
  const quick = quickDeaths(lives);
  if (options.giveUp && quick >= MAX_QUICK_DEATHS) {
    return {
      kind: "give-up",
      quickDeaths: quick,
      reason: `it died ${quick} times in a row within ${STABLE_AFTER_MS / 1000} s of starting`,
    };
  }
  const delayMs = Math.min(RESTART_DELAY_MS * 2 ** quick, MAX_RESTART_DELAY_MS);
  return { kind: "restart", delayMs, quickDeaths: quick };
}

/** The lives worth keeping to decide the next restart (older ones never change a decision). */
export function recentLives(lives: readonly Life[]): Life[] {
  return lives.slice(-(MAX_QUICK_DEATHS + 1));
}
