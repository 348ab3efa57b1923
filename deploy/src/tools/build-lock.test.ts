import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUILD_LOCK_MAX_AGE_MS, lockState, processAlive, withBuildLock } from "./build-lock.js";

const root = mkdtempSync(join(tmpdir(), "build-lock-"));
const dir = () => mkdtempSync(join(root, "t-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("withBuildLock", () => {
  it("holds the lock folder, with this process's pid, while the function runs, and removes it after", async () => {
    const lock = join(dir(), "tool.lock");
    const seen = await withBuildLock(lock, {}, async () => readFileSync(join(lock, "pid"), "utf8"));
    expect(seen).toBe(String(process.pid));
    expect(existsSync(lock)).toBe(false);
  });

  it("removes the lock when the function fails, and passes the failure on", async () => {
    const lock = join(dir(), "tool.lock");
    await expect(
      withBuildLock(lock, {}, async () => {
        throw new Error("go build failed");
      }),
    ).rejects.toThrow("go build failed");
    expect(existsSync(lock)).toBe(false);
  });

  it("runs one holder at a time: the second waits, told once who holds it", async () => {
    const lock = join(dir(), "tool.lock");
    const order: string[] = [];
    const waits: Array<number | undefined> = [];
    let release: () => void = () => {};
    const first = withBuildLock(lock, {}, async () => {
      order.push("first starts");
      await new Promise<void>((r) => {
        release = r;
      });
      order.push("first ends");
    });
    const second = withBuildLock(lock, { pollMs: 10, onWait: (owner) => waits.push(owner) }, async () => {
      order.push("second runs");
    });
    await new Promise((r) => setTimeout(r, 60));
    expect(order).toEqual(["first starts"]);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(["first starts", "first ends", "second runs"]);
    expect(waits).toEqual([process.pid]);
  });

  it("takes over the lock of a process that is gone", async () => {
    const lock = join(dir(), "tool.lock");
    mkdirSync(lock);
    writeFileSync(join(lock, "pid"), "999999999");
    const waits: unknown[] = [];
    expect(await withBuildLock(lock, { onWait: (o) => waits.push(o) }, async () => "ran")).toBe("ran");
    expect(waits).toEqual([]);
  });

  it("stops waiting when aborted, without running the function", async () => {
    const lock = join(dir(), "tool.lock");
    mkdirSync(lock);
    writeFileSync(join(lock, "pid"), String(process.pid));
    const controller = new AbortController();
    const ran = jest.fn();
    const waiting = withBuildLock(lock, { pollMs: 10, signal: controller.signal }, async () => ran());
    controller.abort();
    await expect(waiting).rejects.toThrow(/interrupted/);
    expect(ran).not.toHaveBeenCalled();
  });
});

describe("lockState", () => {
  const made = (pid?: string, ageMs = 0) => {
    const lock = join(dir(), "tool.lock");
    mkdirSync(lock);
    if (pid !== undefined) writeFileSync(join(lock, "pid"), pid);
    const t = (Date.now() - ageMs) / 1000;
    utimesSync(lock, t, t);
    return lock;
  };

  it("is held by a live owner, stale once the owner is gone", () => {
    expect(lockState(made("42"), Date.now(), () => true)).toEqual({ kind: "held", owner: 42 });
    expect(lockState(made("42"), Date.now(), () => false)).toEqual({ kind: "stale" });
  });

  it("is held for a minute before its pid is written, stale after", () => {
    expect(lockState(made(), Date.now())).toEqual({ kind: "held", owner: undefined });
    expect(lockState(made(undefined, 61_000), Date.now())).toEqual({ kind: "stale" });
  });

  it("is stale past the longest build, whoever holds it (a pid reused by another program)", () => {
    expect(lockState(made("42", BUILD_LOCK_MAX_AGE_MS + 1000), Date.now(), () => true)).toEqual({ kind: "stale" });
  });

  it("is stale when gone (removed meanwhile: try again)", () => {
    expect(lockState(join(dir(), "none.lock"), Date.now())).toEqual({ kind: "stale" });
  });
});

describe("processAlive", () => {
  it("knows this process, and no process by a pid that cannot be", () => {
    expect(processAlive(process.pid)).toBe(true);
    expect(processAlive(0)).toBe(false);
    expect(processAlive(-1)).toBe(false);
    expect(processAlive(Number.NaN)).toBe(false);
  });
});
