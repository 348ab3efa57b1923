import { createGates } from "./test-gates.js";
import { createUpdateBatcher } from "./update-batcher.js";

/** A change: documents in state `from` move to state `to`. */
interface Move {
  from: string;
  to: string;
}

/**
 * An in-memory collection of states by id, whose updateMany waits to be released (so callers can arrive while one is
 * under way) and records each command; `fail` makes the commands of one target state fail.
 */
function fakeCollection(states: Record<string, string>, fail?: string) {
  const commands: Array<{ ids: string[]; to: string }> = [];
  const reads: string[][] = [];
  const gates = createGates();
  const batcher = createUpdateBatcher<Move>({
    keyOf: (m) => `${m.from}>${m.to}`,
    async updateMany(ids, m) {
      commands.push({ ids: [...ids], to: m.to });
      await gates.wait();
      if (m.to === fail) throw new Error(`cannot move to ${m.to}`);
      let matched = 0;
      for (const id of ids) {
        if (states[id] !== m.from) continue;
        states[id] = m.to;
        matched++;
      }
      return matched;
    },
    async holding(ids, m) {
      reads.push([...ids]);
      return new Set(ids.filter((id) => states[id] === m.to));
    },
  });
  // `release` lets every command under way finish.
  return { batcher, commands, reads, release: gates.openAll, states };
}

describe("createUpdateBatcher", () => {
  it("sends a lone update at once, and says it holds", async () => {
    const c = fakeCollection({ a: "creating" });
    const done = c.batcher.update("a", { from: "creating", to: "scheduled" });
    expect(c.commands).toEqual([{ ids: ["a"], to: "scheduled" }]);
    await c.release();
    await expect(done).resolves.toBe(true);
    expect(c.states.a).toBe("scheduled");
    expect(c.reads).toEqual([]);
  });

  it("sends the updates that arrived meanwhile together, one command per distinct change", async () => {
    const c = fakeCollection({ a: "creating", b: "creating", c: "creating", d: "creating", e: "creating" });
    const first = c.batcher.update("a", { from: "creating", to: "scheduled" });
    const rest = [
      c.batcher.update("b", { from: "creating", to: "scheduled" }),
      c.batcher.update("c", { from: "creating", to: "blocked" }),
      c.batcher.update("d", { from: "creating", to: "scheduled" }),
      c.batcher.update("e", { from: "creating", to: "blocked" }),
    ];
    await c.release();
    expect(c.commands).toEqual([
      { ids: ["a"], to: "scheduled" },
      { ids: ["b", "d"], to: "scheduled" },
      { ids: ["c", "e"], to: "blocked" },
    ]);
    await c.release();
    await expect(Promise.all([first, ...rest])).resolves.toEqual([true, true, true, true, true]);
    expect(c.states).toEqual({ a: "scheduled", b: "scheduled", c: "blocked", d: "scheduled", e: "blocked" });
  });

  it("reads back on a short count: a document another writer moved is false, one holding the change is true", async () => {
    const c = fakeCollection({ a: "creating", b: "creating", c: "creating", d: "creating" });
    const first = c.batcher.update("a", { from: "creating", to: "scheduled" });
    const moved = c.batcher.update("b", { from: "creating", to: "scheduled" });
    const same = c.batcher.update("c", { from: "creating", to: "scheduled" });
    const fine = c.batcher.update("d", { from: "creating", to: "scheduled" });
    // While the first command runs, other writers move b elsewhere and c to the very state asked for.
    c.states.b = "canceled";
    c.states.c = "scheduled";
    await c.release();
    await c.release();
    await expect(Promise.all([first, moved, same, fine])).resolves.toEqual([true, false, true, true]);
    expect(c.reads).toEqual([["b", "c", "d"]]);
  });

  it("a failed command fails the callers of its change only", async () => {
    const c = fakeCollection({ a: "creating", b: "creating", c: "creating" }, "blocked");
    const first = c.batcher.update("a", { from: "creating", to: "scheduled" });
    const failed = c.batcher.update("b", { from: "creating", to: "blocked" }).catch((e: unknown) => e);
    const ok = c.batcher.update("c", { from: "creating", to: "scheduled" });
    await c.release();
    await c.release();
    await expect(first).resolves.toBe(true);
    await expect(ok).resolves.toBe(true);
    expect(await failed).toEqual(new Error("cannot move to blocked"));
  });

  it("sends at most maxDocs documents in one command", async () => {
    const states = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`d${i}`, "creating"]));
    const commands: string[][] = [];
    const batcher = createUpdateBatcher<Move>({
      keyOf: (m) => m.to,
      async updateMany(ids, m) {
        commands.push(ids);
        await new Promise((r) => setImmediate(r));
        for (const id of ids) states[id] = m.to;
        return ids.length;
      },
      holding: async () => new Set(),
      maxDocs: 3,
    });
    const all = Object.keys(states).map((id) => batcher.update(id, { from: "creating", to: "scheduled" }));
    await expect(Promise.all(all)).resolves.toEqual(Array(7).fill(true));
    expect(commands).toEqual([["d0"], ["d1", "d2", "d3"], ["d4", "d5", "d6"]]);
  });
});
