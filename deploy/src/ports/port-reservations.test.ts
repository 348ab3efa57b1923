import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { releaseReservedPorts, reservePort } from "./port-reservations.js";

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

describe("reservePort", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ports-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("notes a port for this process once; a second choice of it is refused", () => {
    expect(reservePort(24_001, dir)).toBe(true);
    expect(readFileSync(join(dir, "24001"), "utf8")).toBe(String(process.pid));
    expect(reservePort(24_001, dir)).toBe(false);
    expect(reservePort(24_002, dir)).toBe(true);
  });

  it("refuses a port another live process noted", () => {
    writeFileSync(join(dir, "24003"), String(process.ppid));
    expect(reservePort(24_003, dir)).toBe(false);
    expect(readFileSync(join(dir, "24003"), "utf8")).toBe(String(process.ppid));
  });

  it("takes over the note of a process that is gone, or a note that is not a pid", () => {
    writeFileSync(join(dir, "24004"), String(deadPid()));
    writeFileSync(join(dir, "24005"), "");
    expect(reservePort(24_004, dir)).toBe(true);
    expect(reservePort(24_005, dir)).toBe(true);
    expect(readFileSync(join(dir, "24004"), "utf8")).toBe(String(process.pid));
  });

  it("removes this process's notes on release, and leaves notes other processes took over", () => {
    expect(reservePort(24_006, dir)).toBe(true);
    expect(reservePort(24_007, dir)).toBe(true);
    writeFileSync(join(dir, "24007"), String(process.ppid));
    releaseReservedPorts();
    expect(existsSync(join(dir, "24006"))).toBe(false);
    expect(readFileSync(join(dir, "24007"), "utf8")).toBe(String(process.ppid));
  });
});
