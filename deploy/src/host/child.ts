import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, statSync, writeSync } from "node:fs";

/** How a process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (for example ENOENT). */
  error?: Error;
}

/** A long-running child process whose output goes to a log file. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  /** Resolves once the process has exited (or failed to start). */
  readonly exited: Promise<ExitStatus>;
  running(): boolean;
  /** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone. */
  stop(graceMs?: number): Promise<ExitStatus>;
  /** Sends SIGKILL at once, synchronously (for the process "exit" handler). */
  killNow(): void;
  /** Sends a signal if the process still runs. */
  kill(signal: NodeJS.Signals): void;
  /** The last lines this process wrote to its log during this run. */
  logTail(lines?: number): string;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  logFile: string;
  /**
   * Run in its own process group, so that a Ctrl-C in the terminal reaches only the launcher, which then stops
   * everything in order.
   */
  detached: boolean;
}

/** Starts a process with stdout and stderr appended to its log file (the launcher holds no pipe to it). */
export function spawnManaged(opts: SpawnOptions): ManagedProcess {
  const fd = openSync(opts.logFile, "a");
  const startOffset = statSync(opts.logFile).size;
  writeSync(fd, `\n=== ${new Date().toISOString()} ${opts.command} ${opts.args.join(" ")}\n`);
  let child: ChildProcess;
  try {
    child = spawn(opts.command, [...opts.args], {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ["ignore", fd, fd],
      detached: opts.detached,
    });
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(fd);
  }
  let status: ExitStatus | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("error", (error) => {
      status ??= { code: null, signal: null, error };
      resolve(status);
    });
    child.once("exit", (code, signal) => {
      status ??= { code, signal };
      resolve(status);
    });
  });
  const running = () => status === undefined && child.pid !== undefined;
  const signal = (sig: NodeJS.Signals) => {
    if (!running()) return;
    try {
      child.kill(sig);
    } catch {
      // Already gone.
    }
  };
  return {
    name: opts.name,
    pid: child.pid ?? -1,
    command: opts.command,
    args: opts.args,
    logFile: opts.logFile,
    exited,
    running,
    async stop(graceMs = 10_000) {
      if (!running()) return exited;
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    killNow: () => signal("SIGKILL"),
    kill: signal,
    logTail: (lines = 30) => readTail(opts.logFile, startOffset, lines),
  };
}

/** The last lines of a file from an offset on. */
export function readTail(file: string, fromOffset: number, lines: number): string {
  try {
    const text = readFileSync(file).subarray(fromOffset).toString("utf8");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** Describes an exit status for a message, for example "exited with code 1". */
export function describeExit(status: ExitStatus): string {
  if (status.error) return `could not be started (${status.error.message})`;
  if (status.signal) return `was killed by ${status.signal}`;
  return `exited with code ${status.code}`;
}

/** Runs a command to completion, appending its output to a log file; rejects with the log's tail on failure. */
export async function runToCompletion(
  opts: Omit<SpawnOptions, "detached"> & { what: string; signal?: AbortSignal },
): Promise<void> {
  const proc = spawnManaged({ ...opts, detached: false });
  const onAbort = () => proc.killNow();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const status = await proc.exited;
    if (status.code === 0) return;
    throw new Error(`${opts.what} failed: ${opts.command} ${describeExit(status)}\n${proc.logTail(40)}`);
  } finally {
    opts.signal?.removeEventListener("abort", onAbort);
  }
}
