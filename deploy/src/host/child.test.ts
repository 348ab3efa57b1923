import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StackStartError, waitUntil } from "../stack/wait.js";
import { describeExit, spawnManaged } from "./child.js";

describe("spawnManaged", () => {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-child-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const node = (name: string, script: string) =>
    spawnManaged({
      name,
      command: process.execPath,
      args: ["-e", script],
      env: process.env,
      cwd: dir,
      logFile: join(dir, `${name}.log`),
      detached: false,
    });

  it("appends the output to the log file and shows only this run's tail", async () => {
    await node("echo", "console.log('first run')").exited;
    const proc = node("echo", "console.log('second run'); console.error('oops')");
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    expect(readFileSync(proc.logFile, "utf8")).toContain("first run");
    expect(proc.logTail()).toContain("second run\noops");
    expect(proc.logTail()).not.toContain("first run");
  });

  it("kills a process that ignores SIGTERM after the grace period", async () => {
    const proc = node(
      "stubborn",
      "process.on('SIGTERM', () => {}); console.log('ignoring ' + 'SIGTERM'); setInterval(() => {}, 1000)",
    );
    await waitUntil(async () => proc.logTail().includes("ignoring SIGTERM"), { what: "stubborn", timeoutMs: 5000 });
    const status = await proc.stop(300);
    expect(status.signal).toBe("SIGKILL");
    expect(proc.running()).toBe(false);
  });

  it("reports a binary that does not exist", async () => {
    const proc = spawnManaged({
      name: "missing",
      command: join(dir, "no-such-binary"),
      args: [],
      env: process.env,
      cwd: dir,
      logFile: join(dir, "missing.log"),
      detached: false,
    });
    expect(describeExit(await proc.exited)).toMatch(/could not be started \(.*ENOENT/);
  });

  it("makes a wait fail at once, with the log tail, when the process exits while starting", async () => {
    const proc = node("crashing", "console.error('cannot connect to MongoDB'); process.exit(3)");
    const started = Date.now();
    const err = await waitUntil(async () => false, { what: "identity", proc, timeoutMs: 30_000 }).catch((e) => e);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(err).toBeInstanceOf(StackStartError);
    expect(err.message).toBe(`identity exited with code 3 while starting; its log is ${proc.logFile}`);
    expect(err.logTail).toContain("cannot connect to MongoDB");
  });

  it("makes a wait time out with a message naming the process and its log", async () => {
    const proc = node("slow", "setTimeout(() => {}, 10000)");
    await expect(waitUntil(async () => false, { what: "gateway", proc, timeoutMs: 300 })).rejects.toThrow(
      `gateway did not become ready within 0 s; its log is ${proc.logFile}`,
    );
    await proc.stop();
  });
});
