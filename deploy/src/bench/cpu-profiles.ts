import { mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Env, envValue } from "../host/paths.js";

/**
 * CPU profiles of the stack's processes over a measured phase (`BENCH_PROFILE=<dir> npm run bench`): the stack starts
 * with cpu-profile.cjs preloaded, and `window(label)` starts a profile in every process and answers a function that
 * stops them and waits for their files, named `<label>-<process>.cpuprofile` in the directory. Without BENCH_PROFILE
 * nothing is preloaded and a window does nothing.
 */
export interface Profiler {
  /** The settings the stack's processes start with (none without BENCH_PROFILE). */
  readonly stackEnv: Env;
  /** Starts profiles of `pids` (process name → pid); the answer stops them and waits for their files. */
  window(label: string, pids: Record<string, number>): () => Promise<void>;
}

/** How long the processes get to write their profiles once stopped. */
const WRITE_WAIT_MS = 15_000;

/** Whether a process runs Node with a `.js` main (its command line, from /proc): one the preload is loaded into. */
function isNodeMain(pid: number): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return /(^|\/)node$/.test(args[0] ?? "") && args.some((a) => a.endsWith(".js"));
  } catch {
    return false;
  }
}

export function createProfiler(env: Env, repoRoot: string, say: (line: string) => void): Profiler {
  const setting = envValue(env, "BENCH_PROFILE");
  if (!setting) return { stackEnv: {}, window: () => async () => {} };
  const dir = resolve(setting);
  mkdirSync(dir, { recursive: true });
  const preload = join(repoRoot, "deploy", "src", "bench", "cpu-profile.cjs");
  const signal = (pids: Record<string, number>) => {
    for (const pid of Object.values(pids)) {
      try {
        process.kill(pid, "SIGUSR2");
      } catch {
        // Gone (restarted by the supervisor): its profile is lost.
      }
    }
  };
  /** Only Node processes run the preload: SIGUSR2 ends any other (FerretDB, nats-server) at once. */
  const profiled = (pids: Record<string, number>) =>
    Object.fromEntries(Object.entries(pids).filter(([, pid]) => isNodeMain(pid)));
  return {
    stackEnv: {
      NODE_OPTIONS: `${envValue(env, "NODE_OPTIONS") ?? ""} --require ${preload}`.trim(),
      CONVEYOR_PROFILE_DIR: dir,
    },
    window(label, all) {
      const pids = profiled(all);
      const before = new Set(readdirSync(dir));
      signal(pids);
      return async () => {
        signal(pids);
        const expected = Object.keys(pids).length;
        const deadline = Date.now() + WRITE_WAIT_MS;
        let fresh: string[] = [];
        while (Date.now() < deadline) {
          fresh = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile") && !before.has(f));
          if (fresh.length >= expected) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        for (const file of fresh) {
          const process = file.replace(/-\d+-\d+\.cpuprofile$/, "");
          renameSync(join(dir, file), join(dir, `${label}-${process}.cpuprofile`));
        }
        say(`CPU profiles of ${label}: ${fresh.length} of ${expected} processes in ${dir}`);
      };
    },
  };
}
