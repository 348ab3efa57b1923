import { createSharedReads } from "./shared-reads.js";

/** A controllable clock and reads that finish when told. */
function setup() {
  let clock = 0;
  const shared = createSharedReads(() => clock);
  let started = 0;
  const gates: Array<(value: string) => void> = [];
  const read = () => {
    started++;
    return new Promise<string>((resolve) => gates.push(resolve));
  };
  const tick = () => new Promise((r) => setImmediate(r));
  return {
    shared,
    read,
    tick,
    at: (t: number) => {
      clock = t;
    },
    started: () => started,
    finish: async (value: string) => {
      gates.shift()?.(value);
      await tick();
    },
  };
}

describe("createSharedReads", () => {
  it("lets a request that arrived before a read began take that read's answer", async () => {
    const s = setup();
    s.at(10);
    const first = s.shared.share("k", 5, s.read);
    const second = s.shared.share("k", 9, s.read);
    await s.tick();
    expect(s.started()).toBe(1);
    await s.finish("answer");
    await expect(Promise.all([first, second])).resolves.toEqual(["answer", "answer"]);
  });

  it("never gives a request the answer of a read that began before it arrived", async () => {
    const s = setup();
    s.at(10);
    const old = s.shared.share("k", 5, s.read);
    // Arrived at 12, after the read under way began at 10 (a change acknowledged at 11 may be missing from it).
    s.at(13);
    const late = s.shared.share("k", 12, s.read);
    await s.tick();
    expect(s.started()).toBe(2);
    // Who arrived before the second read began shares it.
    const later = s.shared.share("k", 12.5, s.read);
    await s.finish("old");
    await s.finish("new");
    await expect(Promise.all([old, late, later])).resolves.toEqual(["old", "new", "new"]);
    expect(s.started()).toBe(2);
  });

  it("shares nothing across keys, nor once a read has ended", async () => {
    const s = setup();
    s.at(10);
    const a = s.shared.share("a", 5, s.read);
    const b = s.shared.share("b", 5, s.read);
    await s.tick();
    expect(s.started()).toBe(2);
    await s.finish("a");
    await s.finish("b");
    await expect(Promise.all([a, b])).resolves.toEqual(["a", "b"]);
    const again = s.shared.share("a", 5, s.read);
    await s.tick();
    expect(s.started()).toBe(3);
    await s.finish("a2");
    await expect(again).resolves.toBe("a2");
  });

  it("hands a failed read's error to every request sharing it, and the next one reads again", async () => {
    let clock = 10;
    const shared = createSharedReads(() => clock);
    let fail = true;
    let reads = 0;
    const read = async () => {
      reads++;
      await new Promise((r) => setImmediate(r));
      if (fail) throw new Error("database gone");
      return "ok";
    };
    const both = [shared.share("k", 5, read), shared.share("k", 6, read)];
    await expect(Promise.allSettled(both)).resolves.toEqual([
      { status: "rejected", reason: new Error("database gone") },
      { status: "rejected", reason: new Error("database gone") },
    ]);
    fail = false;
    clock = 20;
    await expect(shared.share("k", 15, read)).resolves.toBe("ok");
    expect(reads).toBe(2);
  });
});
