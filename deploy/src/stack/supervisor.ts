import { setTimeout as sleep } from "node:timers/promises";
import { describeExit, type ExitStatus, type ManagedProcess } from "../host/child.js";
import { type Life, nextRestart, recentLives } from "./restart-policy.js";

/** One process the supervisor keeps running: its first process and how to start it again on the same port. */
export interface SupervisedEntry {
  name: string;
  proc: ManagedProcess;
  /** Starts the process again and resolves once it is ready; rejects when it does not come up. */
  restart(): Promise<ManagedProcess>;
}

/** Why the supervisor stopped restarting a process. */
export interface GaveUp {
  name: string;
  /** The process's last life (for its log file and tail). */
  proc: ManagedProcess;
  status: ExitStatus;
  reason: string;
}

export interface Supervisor {
  /** Resolves when a process keeps dying and the supervisor gave up on it (the stack is then stopped by its owner). */
  readonly gaveUp: Promise<GaveUp>;
  /** A process's current (newest) process. */
  current(name: string): ManagedProcess | undefined;
  /** How many times each process was started again. */
  restarts(): Record<string, number>;
  /**
   * Holds a process: if it dies now it stays down until `release` (a fault drill measuring an outage of a given
   * length). Restarting one already on its way is not interrupted.
   */
  hold(name: string): void;
  /** Ends a hold; if the process is down, starts it again at once. Resolves with its process once it runs. */
  release(name: string): Promise<ManagedProcess>;
  /** Ends the supervision (the stack is stopping): no exit is followed by a restart any more. */
  close(): void;
}

export interface SupervisorOptions {
  log(line: string): void;
  /** Whether the stack is stopping (an exit then is expected). */
  stopping(): boolean;
  now?: () => number;
  wait?: (ms: number) => Promise<unknown>;
}

interface State {
  entry: SupervisedEntry;
  proc: ManagedProcess;
  startedAt: number;
  lives: Life[];
  held: boolean;
  /** Set while a restart is under way: resolves with whether the process runs again. */
  restarting: Promise<boolean> | undefined;
  lastStatus: ExitStatus | undefined;
  restarts: number;
}

/**
 * Keeps the stack's processes running on one machine, as Kubernetes would in the chart: a process that exits while
 * the stack is not stopping is started again after a pause (restart-policy.ts: 0.5 s, doubling while it keeps
 * dying quickly, up to 30 s), with a log line saying why and where its log is; after five quick deaths in a row it
 * gives up, loudly, through `gaveUp`.
 */
export function superviseProcesses(entries: readonly SupervisedEntry[], opts: SupervisorOptions): Supervisor {
  const now = opts.now ?? Date.now;
  const wait = opts.wait ?? sleep;
  let closed = false;
  let giveUp: (value: GaveUp) => void = () => {};
  const gaveUp = new Promise<GaveUp>((resolve) => {
    giveUp = resolve;
  });
  const states = new Map<string, State>();
  const ended = () => closed || opts.stopping();

  const restartLoop = async (s: State, firstDelayMs?: number): Promise<boolean> => {
    let first = true;
    for (;;) {
      const decision = nextRestart(s.lives);
      if (decision.kind === "give-up") {
        opts.log(
          `${s.entry.name} ${describeExit(s.lastStatus ?? { code: null, signal: null })}; ${decision.reason}: not starting it again (see ${s.proc.logFile})`,
        );
        giveUp({
          name: s.entry.name,
          proc: s.proc,
          status: s.lastStatus ?? { code: null, signal: null },
          reason: decision.reason,
        });
        return false;
      }
      const delay = first && firstDelayMs !== undefined ? firstDelayMs : decision.delayMs;
      first = false;
      if (delay > 0) await wait(delay);
      if (ended() || s.held) return false;
      const attemptAt = now();
      try {
        const proc = await s.entry.restart();
        s.proc = proc;
        s.startedAt = attemptAt;
        s.restarts++;
        opts.log(`${s.entry.name} is running again (restart ${s.restarts})`);
        watch(s);
        return true;
      } catch (err) {
        s.lives = recentLives([...s.lives, { startedAt: attemptAt, endedAt: now() }]);
        s.lastStatus = { code: null, signal: null, error: err instanceof Error ? err : new Error(String(err)) };
        if (ended()) return false;
        opts.log(`${s.entry.name} did not start again (${(err as Error).message})`);
      }
    }
  };

  const restart = (s: State, firstDelayMs?: number): Promise<boolean> => {
    s.restarting ??= restartLoop(s, firstDelayMs).finally(() => {
      s.restarting = undefined;
    });
    return s.restarting;
  };

  const watch = (s: State) => {
    const proc = s.proc;
    void proc.exited.then((status) => {
      if (ended() || s.proc !== proc) return;
      s.lives = recentLives([...s.lives, { startedAt: s.startedAt, endedAt: now() }]);
      s.lastStatus = status;
      if (s.held) {
        opts.log(`${s.entry.name} ${describeExit(status)}; held down until released`);
        return;
      }
      const decision = nextRestart(s.lives);
      if (decision.kind === "restart")
        opts.log(
          `${s.entry.name} ${describeExit(status)}; starting it again in ${(decision.delayMs / 1000).toFixed(1)} s (see ${proc.logFile})`,
        );
      void restart(s);
    });
  };

  for (const entry of entries) {
    const s: State = {
      entry,
      proc: entry.proc,
      startedAt: now(),
      lives: [],
      held: false,
      restarting: undefined,
      lastStatus: undefined,
      restarts: 0,
    };
    states.set(entry.name, s);
    watch(s);
  }

  const state = (name: string): State => {
    const s = states.get(name);
    if (!s) throw new Error(`no supervised process is named ${name}`);
    return s;
  };

  return {
    gaveUp,
    current: (name) => states.get(name)?.proc,
    restarts: () => Object.fromEntries([...states].map(([name, s]) => [name, s.restarts])),
    hold(name) {
      state(name).held = true;
    },
    async release(name) {
      const s = state(name);
      s.held = false;
      if (s.proc.running()) return s.proc;
      // A restart already under way (it saw the hold and stopped, or is starting the process) is waited for first.
      if (s.restarting) await s.restarting;
      if (!s.proc.running() && !(await restart(s, 0))) throw new Error(`${name} did not start again`);
      return s.proc;
    },
    close() {
      closed = true;
    },
  };
}
