import { setTimeout as sleep } from "node:timers/promises";
import { describeExit, type ManagedProcess } from "../host/child.js";
import { type Env, envValue } from "../host/paths.js";
import { type Balancer, type BalancerTarget, startBalancer } from "./balancer.js";
import { type Life, nextRestart, recentLives } from "./restart-policy.js";
import type { ReplicaSlot } from "./services.js";
import { httpStatus } from "./wait.js";

/** The most replicas per process the launcher runs (each is a Node process of 60–100 MB). */
export const MAX_REPLICAS = 8;

/** CONVEYOR_REPLICAS: how many replicas of every backend service and of the gateway to run (1, the default, to 8). */
export function replicaCount(env: Env): number {
  const raw = envValue(env, "CONVEYOR_REPLICAS");
  if (raw === undefined) return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_REPLICAS) {
    throw new Error(`CONVEYOR_REPLICAS must be a whole number from 1 to ${MAX_REPLICAS}, got "${raw}"`);
  }
  return n;
}

/** The slots of `count` replicas of a process: names "<name>-1" … and a free port (and health port) each. */
export async function replicaSlots(
  name: string,
  count: number,
  freePort: () => Promise<number>,
): Promise<ReplicaSlot[]> {
  const slots: ReplicaSlot[] = [];
  for (let i = 1; i <= count; i++)
    slots.push({ name: `${name}-${i}`, port: await freePort(), healthPort: await freePort() });
  return slots;
}

/** How often each replica's readiness is checked (the balancers skip a replica that failed its last check). */
const CHECK_INTERVAL_MS = 500;
export interface ReplicaSetOptions {
  /** The process's name ("builds", "gateway"), for messages. */
  name: string;
  slots: readonly ReplicaSlot[];
  /** Where each replica answers 200 when ready. */
  readinessUrl(slot: ReplicaSlot): string;
  /** Spawns one replica and resolves once it is ready (startProcess); rejects when it does not come up. */
  start(slot: ReplicaSlot): Promise<ManagedProcess>;
  /** Whether the stack is stopping (a replica exiting then is not restarted). */
  stopping(): boolean;
  log(line: string): void;
}

/** Several replicas of one process, kept running like a Deployment's pods, behind balancers. */
export interface ReplicaSet {
  readonly name: string;
  readonly slots: readonly ReplicaSlot[];
  /** The replicas' current processes, in slot order (a restarted replica's newest process). */
  processes(): ManagedProcess[];
  /** How many times a replica was started again after it died. */
  restarts(): number;
  /** Balancer targets for the replicas' port ("rpc") or their health port ("health"), sharing one readiness. */
  targets(kind: "rpc" | "health"): BalancerTarget[];
  /** Resolves once every replica is running and ready again (for tests that kill one). */
  allReady(timeoutMs: number): Promise<void>;
  /** Ends the readiness checks and restarts (the processes are stopped by the stack). */
  close(): void;
}

interface Replica {
  slot: ReplicaSlot;
  proc: ManagedProcess;
  ready: boolean;
}

/**
 * Starts every replica (together) and then supervises them: each is checked for readiness twice a second, and one
 * that exits while the stack is not stopping is started again after a pause (restart-policy.ts: 0.5 s, doubling
 * while it keeps dying within 10 s, up to 30 s), as a Deployment's controller would.
 */
export async function startReplicaSet(opts: ReplicaSetOptions): Promise<ReplicaSet> {
  const replicas: Replica[] = await Promise.all(
    opts.slots.map(async (slot) => ({ slot, proc: await opts.start(slot), ready: true })),
  );
  let closed = false;
  let restarts = 0;

  const check = async (r: Replica) => {
    const ok = r.proc.running() && (await httpStatus(opts.readinessUrl(r.slot), 1_000)) === 200;
    r.ready = ok && r.proc.running();
  };
  const checker = setInterval(() => {
    for (const r of replicas) void check(r);
  }, CHECK_INTERVAL_MS);
  checker.unref();

  const supervise = (r: Replica, lives: Life[]) => {
    const proc = r.proc;
    const startedAt = Date.now();
    void proc.exited.then(async (status) => {
      r.ready = false;
      if (closed || opts.stopping()) return;
      let history = recentLives([...lives, { startedAt, endedAt: Date.now() }]);
      opts.log(`${r.slot.name} ${describeExit(status)}; starting it again (see ${proc.logFile})`);
      for (;;) {
        // A replica set never gives up (as a Deployment): the other replicas serve meanwhile.
        const decision = nextRestart(history, { giveUp: false });
        await sleep(decision.kind === "restart" ? decision.delayMs : 0);
        if (closed || opts.stopping()) return;
        const attemptAt = Date.now();
        try {
          r.proc = await opts.start(r.slot);
          r.ready = true;
          restarts++;
          opts.log(`${r.slot.name} is running again`);
          supervise(r, history);
          return;
        } catch (err) {
          if (closed || opts.stopping()) return;
          history = recentLives([...history, { startedAt: attemptAt, endedAt: Date.now() }]);
          opts.log(`${r.slot.name} did not start again (${(err as Error).message}); retrying`);
        }
      }
    });
  };
  for (const r of replicas) supervise(r, []);

  const target = (r: Replica, kind: "rpc" | "health"): BalancerTarget => ({
    name: r.slot.name,
    host: "127.0.0.1",
    port: kind === "rpc" ? r.slot.port : r.slot.healthPort,
    ready: () => r.ready,
    markDown: () => {
      r.ready = false;
    },
  });

  return {
    name: opts.name,
    slots: opts.slots,
    processes: () => replicas.map((r) => r.proc),
    restarts: () => restarts,
    targets: (kind) => replicas.map((r) => target(r, kind)),
    async allReady(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!replicas.every((r) => r.ready && r.proc.running())) {
        if (Date.now() > deadline) throw new Error(`${opts.name}: not every replica is ready after ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    close() {
      closed = true;
      clearInterval(checker);
    },
  };
}

/**
 * Starts the balancers of a replica set on the process's usual address: its RPC (or REST) port, and the health port
 * of a backend.
 */
export async function startReplicaBalancers(
  set: ReplicaSet,
  listen: { host: string; port: number; healthPort?: number },
): Promise<Balancer[]> {
  const main = await startBalancer({
    name: set.name,
    host: listen.host,
    port: listen.port,
    targets: set.targets("rpc"),
  });
  const balancers = [main];
  if (listen.healthPort !== undefined) {
    balancers.push(
      await startBalancer({
        name: `${set.name}-health`,
        host: listen.host,
        port: listen.healthPort,
        targets: set.targets("health"),
      }),
    );
  }
  return balancers;
}
