import type { ExitStatus, ManagedProcess } from "../host/child.js";
import { superviseProcesses } from "./supervisor.js";

/** A process stand-in whose death the test decides. */
function fakeProcess(name: string) {
  let resolveExit: (s: ExitStatus) => void = () => {};
  let alive = true;
  const exited = new Promise<ExitStatus>((resolve) => {
    resolveExit = resolve;
  });
  const proc: ManagedProcess & { die(status?: ExitStatus): void } = {
    name,
    pid: 1,
    command: "node",
    args: [],
    logFile: `/logs/${name}.log`,
    exited,
    running: () => alive,
    stop: async () => exited,
    killNow: () => {},
    kill: () => {},
    logTail: () => "",
    die(status = { code: null, signal: "SIGKILL" }) {
      alive = false;
      resolveExit(status);
    },
  };
  return proc;
}

type Fake = ReturnType<typeof fakeProcess>;

/** A clock the test moves, and waits that return at once (recording how long they were asked to be). */
function harness() {
  let t = 0;
  const waits: number[] = [];
  const lines: string[] = [];
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
    wait: async (ms: number) => {
      waits.push(ms);
      t += ms;
    },
    waits,
    lines,
    log: (line: string) => lines.push(line),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("the stack's supervisor", () => {
  it("starts a process that died again, after the first pause, and watches the new one", async () => {
    const h = harness();
    const first = fakeProcess("builds");
    const started: Fake[] = [];
    const sup = superviseProcesses(
      [
        {
          name: "builds",
          proc: first,
          restart: async () => {
            const p = fakeProcess("builds");
            started.push(p);
            return p;
          },
        },
      ],
      { log: h.log, stopping: () => false, now: h.now, wait: h.wait },
    );
    h.advance(60_000);
    first.die();
    await settle();
    await settle();
    expect(started).toHaveLength(1);
    expect(sup.current("builds")).toBe(started[0]);
    expect(h.waits).toEqual([500]);
    expect(h.lines.join("\n")).toMatch(
      /builds was killed by SIGKILL; starting it again in 0.5 s \(see \/logs\/builds.log\)/,
    );
    expect(h.lines.join("\n")).toContain("builds is running again (restart 1)");
    // The new process is watched too.
    h.advance(60_000);
    started[0]?.die({ code: 1, signal: null });
    await settle();
    await settle();
    expect(started).toHaveLength(2);
    expect(sup.restarts()).toEqual({ builds: 2 });
  });

  it("gives up loudly after five quick deaths in a row", async () => {
    const h = harness();
    let current = fakeProcess("gateway");
    const sup = superviseProcesses(
      [
        {
          name: "gateway",
          proc: current,
          restart: async () => {
            current = fakeProcess("gateway");
            return current;
          },
        },
      ],
      { log: h.log, stopping: () => false, now: h.now, wait: h.wait },
    );
    let gaveUp: string | undefined;
    void sup.gaveUp.then((g) => {
      gaveUp = g.reason;
    });
    for (let i = 0; i < 5; i++) {
      h.advance(1_000);
      current.die({ code: 1, signal: null });
      for (let k = 0; k < 4; k++) await settle();
    }
    expect(gaveUp).toBe("it died 5 times in a row within 10 s of starting");
    expect(h.waits).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(h.lines.at(-1)).toMatch(/gateway exited with code 1; it died 5 times .*: not starting it again/);
  });

  it("counts a restart that fails as a quick death and tries again", async () => {
    const h = harness();
    const first = fakeProcess("nats");
    let attempts = 0;
    const sup = superviseProcesses(
      [
        {
          name: "nats",
          proc: first,
          restart: async () => {
            attempts++;
            if (attempts < 3) throw new Error("port 4222 is taken");
            return fakeProcess("nats");
          },
        },
      ],
      { log: h.log, stopping: () => false, now: h.now, wait: h.wait },
    );
    h.advance(60_000);
    first.die();
    for (let k = 0; k < 10; k++) await settle();
    expect(attempts).toBe(3);
    expect(sup.current("nats")?.running()).toBe(true);
    expect(h.waits).toEqual([500, 1_000, 2_000]);
    expect(h.lines.filter((l) => l.includes("did not start again (port 4222 is taken)"))).toHaveLength(2);
  });

  it("restarts nothing while the stack stops, or after it is closed", async () => {
    const h = harness();
    let stopping = false;
    const a = fakeProcess("identity");
    const b = fakeProcess("agents");
    let restarts = 0;
    const restart = async () => {
      restarts++;
      return fakeProcess("x");
    };
    const sup = superviseProcesses(
      [
        { name: "identity", proc: a, restart },
        { name: "agents", proc: b, restart },
      ],
      { log: h.log, stopping: () => stopping, now: h.now, wait: h.wait },
    );
    stopping = true;
    a.die();
    sup.close();
    b.die();
    await settle();
    await settle();
    expect(restarts).toBe(0);
  });

  it("holds a process down until released, then starts it at once", async () => {
    const h = harness();
    const first = fakeProcess("mongodb");
    const again = fakeProcess("mongodb");
    const sup = superviseProcesses([{ name: "mongodb", proc: first, restart: async () => again }], {
      log: h.log,
      stopping: () => false,
      now: h.now,
      wait: h.wait,
    });
    sup.hold("mongodb");
    h.advance(60_000);
    first.die();
    await settle();
    await settle();
    expect(sup.current("mongodb")).toBe(first);
    expect(h.lines.at(-1)).toBe("mongodb was killed by SIGKILL; held down until released");
    await expect(sup.release("mongodb")).resolves.toBe(again);
    expect(h.waits).toEqual([]);
    expect(() => sup.hold("nobody")).toThrow("no supervised process is named nobody");
  });
});
