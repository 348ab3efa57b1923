import { createNumberAllocator } from "./number-allocator.js";

/** A counter per pipeline whose increments the test completes by hand. */
function counter() {
  const seq = new Map<string, number>();
  const calls: Array<{ pipelineId: string; count: number; finish: () => void; fail: (e: Error) => void }> = [];
  const take = (pipelineId: string, count: number) =>
    new Promise<number>((resolve, reject) => {
      calls.push({
        pipelineId,
        count,
        finish: () => {
          const last = (seq.get(pipelineId) ?? 0) + count;
          seq.set(pipelineId, last);
          resolve(last);
        },
        fail: reject,
      });
    });
  return { take, calls };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("build number allocator", () => {
  it("takes one number for a lone create", async () => {
    const c = counter();
    const numbers = createNumberAllocator(c.take);
    const n = numbers.next("p1");
    expect(c.calls).toHaveLength(1);
    c.calls[0]?.finish();
    expect(await n).toBe(1);
  });

  it("serves every create waiting during an increment with one more increment, in arrival order", async () => {
    const c = counter();
    const numbers = createNumberAllocator(c.take);
    const first = numbers.next("p1");
    const waiting = [numbers.next("p1"), numbers.next("p1"), numbers.next("p1")];
    expect(c.calls.map((x) => x.count)).toEqual([1]);
    c.calls[0]?.finish();
    expect(await first).toBe(1);
    await tick();
    expect(c.calls.map((x) => x.count)).toEqual([1, 3]);
    c.calls[1]?.finish();
    expect(await Promise.all(waiting)).toEqual([2, 3, 4]);
  });

  it("keeps pipelines apart", async () => {
    const c = counter();
    const numbers = createNumberAllocator(c.take);
    const a = numbers.next("p1");
    const b = numbers.next("p2");
    expect(c.calls.map((x) => x.pipelineId)).toEqual(["p1", "p2"]);
    for (const call of c.calls) call.finish();
    expect([await a, await b]).toEqual([1, 1]);
  });

  it("fails every create of a failed increment, and the next ones take numbers again", async () => {
    const c = counter();
    const numbers = createNumberAllocator(c.take);
    const first = numbers.next("p1");
    const second = numbers.next("p1");
    const third = numbers.next("p1");
    c.calls[0]?.finish();
    await first;
    await tick();
    c.calls[1]?.fail(new Error("database down"));
    await expect(second).rejects.toThrow("database down");
    await expect(third).rejects.toThrow("database down");
    const fourth = numbers.next("p1");
    await tick();
    c.calls[2]?.finish();
    expect(await fourth).toBe(2);
  });
});
