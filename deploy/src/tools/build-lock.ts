import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

// One build of a tool at a time on this machine (go-build.ts's ensureTool): a process that finds another building
// the same tool waits for its binary instead of building it again beside it (docs/operations.md, "Built tools").

/** A lock older than this is taken over whoever holds it (a pid reused by another program; no build takes so long). */
export const BUILD_LOCK_MAX_AGE_MS = 2 * 3600 * 1000;

/** A lock folder without its pid file yet is its owner's for this long (between its mkdir and its write). */
const UNWRITTEN_LOCK_MS = 60_000;

export interface BuildLockOptions {
  /** Called once when the lock is held by another live process (its pid, when written). */
  onWait?: (owner: number | undefined) => void;
  /** Aborting it stops the waiting (the function is not run). */
  signal?: AbortSignal | undefined;
  pollMs?: number;
}

/**
 * Runs `fn` holding the lock folder `lock`, which holds the owner's pid; meanwhile another process asking for the
 * same lock waits. A lock whose process is gone, or older than BUILD_LOCK_MAX_AGE_MS, is taken over.
 */
export async function withBuildLock<T>(lock: string, opts: BuildLockOptions, fn: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(lock), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, "pid"), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const state = lockState(lock, Date.now());
    if (state.kind === "stale") {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (!announced) {
      opts.onWait?.(state.owner);
      announced = true;
    }
    if (opts.signal?.aborted) throw new Error(`waiting for ${lock} was interrupted`);
    await sleep(opts.pollMs ?? 2000);
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Whether an existing lock folder is held (by a live process, or one that has just made it) or stale (its process
 * is gone, it is too old, or it was never written); `alive` says whether a pid runs.
 */
export function lockState(
  lock: string,
  now: number,
  alive: (pid: number) => boolean = processAlive,
): { kind: "held"; owner: number | undefined } | { kind: "stale" } {
  let age: number;
  try {
    age = now - statSync(lock).mtimeMs;
  } catch {
    return { kind: "stale" }; // Removed meanwhile: try again.
  }
  if (age > BUILD_LOCK_MAX_AGE_MS) return { kind: "stale" };
  let owner: number;
  try {
    owner = Number(readFileSync(join(lock, "pid"), "utf8"));
  } catch {
    return age > UNWRITTEN_LOCK_MS ? { kind: "stale" } : { kind: "held", owner: undefined };
  }
  return alive(owner) ? { kind: "held", owner } : { kind: "stale" };
}

/** Whether a process with this pid is alive (EPERM: it is, owned by someone else). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
