import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Ports chosen for servers that start later, noted where every process on this machine sees them: one file per
 * port, named for it and holding the pid of the process that chose it. A port is free to choose only when nobody
 * listens on it AND no live process noted it. Without the note, two test suites starting stacks at once could both
 * find a port free in the seconds before either server binds it, and so could a suite while a stack's replica
 * restarts on its port (a CI failure: EADDRINUSE in scale-out.e2e). A note lasts as long as its process; a note
 * whose process is gone is taken over.
 */
export const RESERVATIONS_DIR = join(tmpdir(), "conveyor-ports");

/** The ports this process noted, per folder, removed when it exits. */
const mine = new Map<string, Set<number>>();
let releaseOnExit = false;

/** Whether a process with this pid is alive (EPERM: it is, owned by someone else). */
function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes the notes this process made (when it exits; tests call it). A note another process took over stays. */
export function releaseReservedPorts(): void {
  for (const [dir, ports] of mine) {
    for (const port of ports) {
      try {
        if (readFileSync(join(dir, String(port)), "utf8") === String(process.pid)) unlinkSync(join(dir, String(port)));
      } catch {
        // Already gone.
      }
    }
  }
  mine.clear();
}

/**
 * Notes `port` for this process. False when a live process (this one included) noted it already. When notes cannot
 * be written at all (a read-only temporary folder), answers true: the listen check alone decides, as before.
 */
export function reservePort(port: number, dir: string = RESERVATIONS_DIR): boolean {
  const file = join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(file, String(process.pid), { flag: "wx" });
      if (!releaseOnExit) {
        process.once("exit", releaseReservedPorts);
        releaseOnExit = true;
      }
      const ports = mine.get(dir) ?? new Set<number>();
      mine.set(dir, ports.add(port));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") return true;
    }
    let owner: number;
    try {
      owner = Number(readFileSync(file, "utf8"));
    } catch {
      continue; // Removed meanwhile: try again.
    }
    if (alive(owner)) return false;
    try {
      unlinkSync(file);
    } catch {
      // Another process took it over first; the next write says who.
    }
  }
  return false;
}
