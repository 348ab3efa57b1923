import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dataPaths } from "../host/paths.js";
import {
  claimDataDir,
  isRecordedProcessAlive,
  readStackFile,
  recordProcess,
  releaseDataDir,
  StackAlreadyRunningError,
  type StackRecord,
  writeStackFile,
} from "./stack-file.js";

describe("stack.json", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "conveyor-stackfile-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("is claimed by the first launcher and refused to a second while the first lives", async () => {
    const paths = dataPaths(dir);
    const record = await claimDataDir(paths, () => {});
    expect(record.launcher.pid).toBe(process.pid);
    expect(readStackFile(paths)?.state).toBe("starting");
    await expect(claimDataDir(paths, () => {})).rejects.toThrow(StackAlreadyRunningError);
    await expect(claimDataDir(paths, () => {})).rejects.toThrow(/already starting from .* \(launcher pid \d+/);
    releaseDataDir(paths);
    expect(existsSync(paths.stackFile)).toBe(false);
  });

  it("is taken over from a launcher that died, stopping the processes it left behind", async () => {
    const paths = dataPaths(dir);
    const leftover = spawn("sleep", ["60"], { stdio: "ignore" });
    const exited = new Promise((resolve) => leftover.once("exit", (_code, signal) => resolve(signal)));
    const pid = leftover.pid ?? -1;
    const dead: StackRecord = {
      // PID 2^22 + 1 is above Linux's pid_max, so no process has it.
      launcher: { name: "launcher", pid: 4_194_305 },
      state: "running",
      startedAt: new Date().toISOString(),
      dataDir: dir,
      processes: [recordProcess("nats-server", pid)],
    };
    writeStackFile(paths, dead);
    const lines: string[] = [];
    const record = await claimDataDir(paths, (line) => lines.push(line));
    expect(record.launcher.pid).toBe(process.pid);
    expect(await exited).toBe("SIGTERM");
    expect(lines.join("\n")).toContain(`nats-server (pid ${pid})`);
  });

  it("is read as absent when missing or cut short, and a failure to read it is passed on", async () => {
    const paths = dataPaths(dir);
    expect(readStackFile(paths)).toBeUndefined();
    writeFileSync(paths.stackFile, '{"launcher": {"pid": 12');
    expect(readStackFile(paths)).toBeUndefined();
    // A stack.json cut short names no live launcher: the next launcher takes the data directory over.
    expect((await claimDataDir(paths, () => {})).launcher.pid).toBe(process.pid);
    releaseDataDir(paths);
    mkdirSync(paths.stackFile);
    expect(() => readStackFile(paths)).toThrow(/EISDIR/);
    await expect(claimDataDir(paths, () => {})).rejects.toThrow(/EISDIR/);
  });

  it("does not mistake a later process with a reused PID for a recorded one", () => {
    expect(isRecordedProcessAlive(recordProcess("self", process.pid))).toBe(true);
    expect(isRecordedProcessAlive({ name: "self", pid: process.pid, startTime: "1" })).toBe(false);
  });
});
