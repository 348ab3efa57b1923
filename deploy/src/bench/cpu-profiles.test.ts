import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createProfiler } from "./cpu-profiles.js";

const repoRoot = resolve(__dirname, "../../..");

describe("CPU profiles of the bench's phases", () => {
  it("profiles each process over a window and names its file after the phase and the process", async () => {
    const work = mkdtempSync(join(tmpdir(), "cpu-profiles-"));
    const dir = join(work, "profiles");
    const lines: string[] = [];
    const profiler = createProfiler({ BENCH_PROFILE: dir }, repoRoot, (l) => lines.push(l));
    // A process laid out as a service's (<name>/dist/main.js), busy until told to stop.
    mkdirSync(join(work, "svc", "dist"), { recursive: true });
    const main = join(work, "svc", "dist", "main.js");
    writeFileSync(
      main,
      "process.stdout.write('ready\\n'); setInterval(() => { let x = 0; for (let i = 0; i < 1e5; i++) x += i; }, 5);",
    );
    const child = spawn(process.execPath, [main], { env: { ...process.env, ...profiler.stackEnv }, stdio: "pipe" });
    try {
      await new Promise<void>((ready) => child.stdout.once("data", () => ready()));
      // A process that is not Node (sleep) is left alone: SIGUSR2 would end it.
      const other = spawn("sleep", ["30"], { stdio: "ignore" });
      const stop = profiler.window("phase", { svc: child.pid ?? 0, other: other.pid ?? 0 });
      await new Promise((r) => setTimeout(r, 300));
      await stop();
      expect(readdirSync(dir)).toEqual(["phase-svc.cpuprofile"]);
      const profile = JSON.parse(readFileSync(join(dir, "phase-svc.cpuprofile"), "utf8")) as { nodes: unknown[] };
      expect(profile.nodes.length).toBeGreaterThan(1);
      expect(lines).toEqual([`CPU profiles of phase: 1 of 1 processes in ${dir}`]);
      // Both processes lived through the signals.
      expect(child.exitCode).toBeNull();
      expect([other.exitCode, other.signalCode]).toEqual([null, null]);
      other.kill();
    } finally {
      child.kill();
    }
  });

  it("does nothing without BENCH_PROFILE", async () => {
    const profiler = createProfiler({}, repoRoot, () => {});
    expect(profiler.stackEnv).toEqual({});
    await profiler.window("phase", { none: 0 })();
  });
});
