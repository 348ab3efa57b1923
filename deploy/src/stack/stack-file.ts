import { readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { DataPaths } from "../host/paths.js";
import type { StackInfo } from "./stack-info.js";

/** A process the stack started, identified so that a reused PID is never mistaken for it. */
export interface ProcessRecord {
  name: string;
  pid: number;
  /** The kernel's start time of the process (/proc/<pid>/stat field 22), when known. */
  startTime?: string;
}

/** The content of <data>/stack.json while a stack runs from that data directory. */
export interface StackRecord {
  launcher: ProcessRecord;
  state: "starting" | "running";
  startedAt: string;
  dataDir: string;
  info?: StackInfo;
  processes: ProcessRecord[];
}

/** Raised when another launcher already runs a stack from the same data directory. */
export class StackAlreadyRunningError extends Error {
  override name = "StackAlreadyRunningError";
  constructor(readonly record: StackRecord) {
    const where = record.info ? ` at ${record.info.apiUrl}` : "";
    super(
      `A conveyor stack is already ${record.state} from ${record.dataDir}${where} ` +
        `(launcher pid ${record.launcher.pid}, since ${record.startedAt}). ` +
        `Stop it first (Ctrl-C in its terminal, or kill ${record.launcher.pid}), ` +
        "or set CONVEYOR_DATA_DIR and the *_PORT variables to run a second stack beside it.",
    );
  }
}

/** The kernel start time of a process, or undefined when it does not exist or /proc is not there. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses; the fields after it are plain.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19];
  } catch {
    return undefined;
  }
}

/** Records a live process. */
export function recordProcess(name: string, pid: number): ProcessRecord {
  const startTime = processStartTime(pid);
  return startTime === undefined ? { name, pid } : { name, pid, startTime };
}

/** Whether the recorded process still runs (the same process, not a later one with the same PID). */
export function isRecordedProcessAlive(rec: ProcessRecord): boolean {
  if (rec.pid <= 0) return false;
  try {
    process.kill(rec.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (rec.startTime === undefined) return true;
  return processStartTime(rec.pid) === rec.startTime;
}

/**
 * Reads stack.json; undefined when it is missing, or cut short (a launcher that died while creating it). Any other
 * failure to read it (permissions) is thrown: the data directory cannot be claimed or checked then.
 */
export function readStackFile(paths: DataPaths): StackRecord | undefined {
  let text: string;
  try {
    text = readFileSync(paths.stackFile, "utf8");
  } catch (err) {
    if (errorCode(err) === "ENOENT") return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as StackRecord;
  } catch {
    // Not JSON: no launcher finished writing it, so none runs from it.
    return undefined;
  }
}

/** Replaces stack.json atomically. */
export function writeStackFile(paths: DataPaths, record: StackRecord): void {
  const tmp = `${paths.stackFile}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(tmp, paths.stackFile);
}

/**
 * Claims the data directory for this launcher by creating stack.json exclusively. If a live launcher holds it,
 * throws StackAlreadyRunningError. If the holder died without stopping (SIGKILL, power loss), stops the processes
 * it left behind and takes over.
 */
export async function claimDataDir(paths: DataPaths, log: (line: string) => void): Promise<StackRecord> {
  const record: StackRecord = {
    launcher: recordProcess("launcher", process.pid),
    state: "starting",
    startedAt: new Date().toISOString(),
    dataDir: paths.root,
    processes: [],
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(paths.stackFile, `${JSON.stringify(record, null, 2)}\n`, { flag: "wx" });
      return record;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const existing = readStackFile(paths);
    if (existing && isRecordedProcessAlive(existing.launcher)) throw new StackAlreadyRunningError(existing);
    if (existing) await stopLeftovers(existing, log);
    try {
      unlinkSync(paths.stackFile);
    } catch (err) {
      // ENOENT: another launcher removed it first; the exclusive create decides who wins.
      if (errorCode(err) !== "ENOENT") throw err;
    }
  }
  throw new Error(`Could not claim ${paths.stackFile}; another launcher keeps taking it`);
}

/** Removes stack.json if it is still this launcher's. */
export function releaseDataDir(paths: DataPaths): void {
  const existing = readStackFile(paths);
  if (existing && existing.launcher.pid !== process.pid) return;
  try {
    unlinkSync(paths.stackFile);
  } catch (err) {
    if (errorCode(err) !== "ENOENT") throw err;
  }
}

/** Stops the processes a dead launcher left running: SIGTERM, then SIGKILL after 10 s. */
export async function stopLeftovers(record: StackRecord, log: (line: string) => void): Promise<void> {
  const alive = record.processes.filter(isRecordedProcessAlive);
  if (alive.length === 0) return;
  log(
    `stopping ${alive.length} process(es) left running by a launcher that did not stop cleanly: ` +
      alive.map((p) => `${p.name} (pid ${p.pid})`).join(", "),
  );
  const signal = (sig: NodeJS.Signals) => {
    for (const p of alive) {
      try {
        process.kill(p.pid, sig);
      } catch (err) {
        // ESRCH: it exited meanwhile.
        if (errorCode(err) !== "ESRCH") throw err;
      }
    }
  };
  signal("SIGTERM");
  const deadline = Date.now() + 10_000;
  while (alive.some(isRecordedProcessAlive) && Date.now() < deadline) await sleep(100);
  if (alive.some(isRecordedProcessAlive)) {
    signal("SIGKILL");
    await sleep(200);
  }
}

/** The system error code of a failed file or process call (ENOENT, ESRCH, ...), if it has one. */
function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}
