import { createKeyedLock } from "@conveyor/runtime";
import { createLockedRounds } from "./locked-rounds.js";

interface Item {
  id: string;
  done(result: string): void;
  failed(err: unknown): void;
}

/** Rounds that record what each round held, answer each item with its round's number, and throw on `boom`. */
function harness(max = 10) {
  const withLock = createKeyedLock();
  const seen: string[][] = [];
  const add = createLockedRounds<Item>(withLock, {
    max,
    idOf: (item) => item.id,
    async run(_key, round) {
      const number = seen.push(round.map((item) => item.id));
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (round.some((item) => item.id === "boom")) throw new Error("round failed");
      for (const item of round) item.done(`round ${number}`);
    },
    fail: (item, err) => item.failed(err),
  });
  const submit = (key: string, id: string) =>
    new Promise<string>((resolve, reject) => add(key, { id, done: resolve, failed: reject }));
  return { withLock, seen, submit };
}

/** Lets a round that can start take what is queued (its lock is taken a microtask after the add). */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("createLockedRounds", () => {
  it("sends a lone item at once and those arriving meanwhile together in the next round", async () => {
    const { seen, submit } = harness();
    const first = submit("b", "j1");
    await tick();
    const rest = ["j2", "j3", "j4"].map((id) => submit("b", id));
    expect(await first).toBe("round 1");
    expect(await Promise.all(rest)).toEqual(["round 2", "round 2", "round 2"]);
    expect(seen).toEqual([["j1"], ["j2", "j3", "j4"]]);
  });

  it("takes a round once it holds the lock: what waited behind another holder goes together", async () => {
    const { withLock, seen, submit } = harness();
    let release: () => void = () => {};
    const held = withLock("b", () => new Promise<void>((resolve) => (release = resolve)));
    const all = ["j1", "j2", "j3"].map((id) => submit("b", id));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toEqual([]);
    release();
    await held;
    expect(await Promise.all(all)).toEqual(["round 1", "round 1", "round 1"]);
    expect(seen).toEqual([["j1", "j2", "j3"]]);
  });

  it("keeps a second item of the same id, and those beyond the most a round takes, for the next round", async () => {
    const { seen, submit } = harness(2);
    const first = submit("b", "j0");
    await tick();
    const rest = ["j1", "j1", "j2", "j3"].map((id) => submit("b", id));
    await first;
    await Promise.all(rest);
    expect(seen).toEqual([["j0"], ["j1", "j2"], ["j1", "j3"]]);
  });

  it("fails every item of a round that throws, and goes on with the next", async () => {
    const { seen, submit } = harness();
    const first = submit("b", "j1");
    await tick();
    const failing = Promise.allSettled([submit("b", "boom"), submit("b", "j2")]);
    await first;
    await tick();
    const late = submit("b", "j3");
    const settled = await failing;
    expect(settled.map((s) => (s.status === "rejected" ? String(s.reason) : s.value))).toEqual([
      "Error: round failed",
      "Error: round failed",
    ]);
    expect(await late).toBe("round 3");
    expect(seen).toEqual([["j1"], ["boom", "j2"], ["j3"]]);
  });

  it("keeps keys apart: another key's items neither wait for nor join this key's rounds", async () => {
    const { seen, submit } = harness();
    const all = [submit("a", "j1"), submit("b", "j1"), submit("a", "j2")];
    await tick();
    // Both rounds run at once: neither key waits for the other's.
    expect(seen).toEqual([["j1", "j2"], ["j1"]]);
    expect(await Promise.all(all)).toEqual(["round 1", "round 2", "round 1"]);
  });
});
