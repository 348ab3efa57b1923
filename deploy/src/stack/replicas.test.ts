import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnManaged } from "../host/child.js";
import { getFreePort } from "../ports/ports.js";
import { type ReplicaSet, replicaCount, replicaSlots, startReplicaBalancers, startReplicaSet } from "./replicas.js";
import type { ReplicaSlot } from "./services.js";
import { httpStatus, waitUntil } from "./wait.js";

describe("replicaCount", () => {
  it("is 1 unless CONVEYOR_REPLICAS says otherwise, from 1 to 8", () => {
    expect(replicaCount({})).toBe(1);
    expect(replicaCount({ CONVEYOR_REPLICAS: " " })).toBe(1);
    expect(replicaCount({ CONVEYOR_REPLICAS: "2" })).toBe(2);
    expect(replicaCount({ CONVEYOR_REPLICAS: "8" })).toBe(8);
    for (const bad of ["0", "9", "1.5", "two"]) {
      expect(() => replicaCount({ CONVEYOR_REPLICAS: bad })).toThrow(`CONVEYOR_REPLICAS must be a whole number`);
    }
  });
});

describe("replicaSlots", () => {
  it("names replicas <name>-1… and gives each its own port and health port", async () => {
    let next = 5000;
    const slots = await replicaSlots("builds", 2, async () => next++);
    expect(slots).toEqual([
      { name: "builds-1", port: 5000, healthPort: 5001 },
      { name: "builds-2", port: 5002, healthPort: 5003 },
    ]);
  });
});

describe("startReplicaSet", () => {
  const logs = mkdtempSync(join(tmpdir(), "conveyor-replicas-"));
  let set: ReplicaSet | undefined;
  let stopping = false;
  afterAll(async () => {
    stopping = true;
    set?.close();
    await Promise.all((set?.processes() ?? []).map((p) => p.stop(2_000)));
    rmSync(logs, { recursive: true, force: true });
  });

  /** A replica: a tiny HTTP server on the slot's port that answers its name. */
  const start = async (slot: ReplicaSlot) => {
    const proc = spawnManaged({
      name: slot.name,
      command: process.execPath,
      args: [
        "-e",
        `require("node:http").createServer((q, s) => s.end(${JSON.stringify(slot.name)})).listen(${slot.port}, "127.0.0.1")`,
      ],
      env: {},
      cwd: logs,
      logFile: join(logs, `${slot.name}.log`),
      detached: false,
    });
    await waitUntil(async () => (await httpStatus(`http://127.0.0.1:${slot.port}/`)) === 200, {
      what: slot.name,
      proc,
      timeoutMs: 10_000,
    });
    return proc;
  };

  it("starts every replica, starts one that was killed again, and balances over them on one port", async () => {
    const lines: string[] = [];
    const slots = await replicaSlots("hello", 2, getFreePort);
    set = await startReplicaSet({
      name: "hello",
      slots,
      readinessUrl: (slot) => `http://127.0.0.1:${slot.port}/`,
      start,
      stopping: () => stopping,
      log: (line) => lines.push(line),
    });
    const [balancer] = await startReplicaBalancers(set, { host: "127.0.0.1", port: await getFreePort() });
    if (!balancer) throw new Error("no balancer");
    const answer = async () => (await fetch(`http://127.0.0.1:${balancer.port}/`, { keepalive: false })).text();

    const first = set.processes()[0];
    first?.kill("SIGKILL");
    await first?.exited;
    // While hello-1 is down, the balancer sends every connection to hello-2.
    expect(await answer()).toBe("hello-2");
    await set.allReady(10_000);
    expect(set.restarts()).toBe(1);
    expect(set.processes()[0]?.pid).not.toBe(first?.pid);
    expect(set.processes().every((p) => p.running())).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(/^hello-1 was killed by SIGKILL; starting it again/),
      "hello-1 is running again",
    ]);
    await balancer.close();
  }, 30_000);
});
