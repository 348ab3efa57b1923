import { createGroupCommit } from "./group-commit.js";
import { createGates } from "./test-gates.js";

/** A fake send: records each batch; each waits until released, then ends as `answer` says. */
function fakeSend(answer: (items: number[]) => Promise<unknown> = async () => undefined) {
  const batches: number[][] = [];
  const gates = createGates();
  const send = async (items: number[]) => {
    batches.push([...items]);
    await gates.wait();
    return answer(items);
  };
  // `release` lets the oldest batch under way finish.
  return { batches, send, release: gates.openOldest };
}

describe("createGroupCommit", () => {
  it("sends a lone item at once, in the caller's tick", async () => {
    const fake = fakeSend();
    const group = createGroupCommit({ send: fake.send });
    const done = group.add(1);
    expect(fake.batches).toEqual([[1]]);
    await fake.release();
    await expect(done).resolves.toBeUndefined();
  });

  it("sends what arrives during a send together next, in arrival order, and each caller waits for its own", async () => {
    const fake = fakeSend();
    const group = createGroupCommit({ send: fake.send });
    let secondDone = false;
    const first = group.add(1);
    const rest = [2, 3, 4].map((n) =>
      group.add(n).then(() => {
        secondDone = true;
      }),
    );
    expect(fake.batches).toEqual([[1]]);
    await fake.release();
    await expect(first).resolves.toBeUndefined();
    expect(secondDone).toBe(false);
    expect(fake.batches).toEqual([[1], [2, 3, 4]]);
    await fake.release();
    await Promise.all(rest);
    expect(secondDone).toBe(true);
  });

  it("rejects every caller of a failed send with its error, and goes on with the next batch", async () => {
    const boom = new Error("stream unavailable");
    const fake = fakeSend(async (items) => {
      if (items.includes(2)) throw boom;
    });
    const group = createGroupCommit({ send: fake.send });
    const first = group.add(1);
    const failed = [group.add(2).catch((e: unknown) => e), group.add(3).catch((e: unknown) => e)];
    await fake.release();
    const later = group.add(4);
    await fake.release();
    await expect(Promise.all(failed)).resolves.toEqual([boom, boom]);
    await fake.release();
    await expect(Promise.all([first, later])).resolves.toEqual([undefined, undefined]);
    expect(fake.batches).toEqual([[1], [2, 3], [4]]);
  });

  it("rejects the callers of a send that throws before it returns a promise", async () => {
    const group = createGroupCommit<number>({
      send: () => {
        throw new Error("not connected");
      },
    });
    await expect(group.add(1)).rejects.toThrow("not connected");
    await expect(group.add(2)).rejects.toThrow("not connected");
  });

  it("splits batches at maxSize by sizeOf, never splitting an item", async () => {
    const fake = fakeSend();
    const group = createGroupCommit({ send: fake.send, maxSize: 5, sizeOf: (n: number) => n });
    const all = [1, 2, 3, 9, 1].map((n) => group.add(n));
    for (let i = 0; i < 4; i++) await fake.release();
    await Promise.all(all);
    expect(fake.batches).toEqual([[1], [2, 3], [9], [1]]);
  });

  it("lets settle decide per caller", async () => {
    const fake = fakeSend();
    const group = createGroupCommit({
      send: fake.send,
      settle: (batch) => {
        for (const w of batch) {
          if (w.item % 2 === 0) w.reject(new Error(`even ${w.item}`));
          else w.resolve();
        }
      },
    });
    const results = [1, 2, 3].map((n) =>
      group.add(n).then(
        () => "ok",
        (e: Error) => e.message,
      ),
    );
    await fake.release();
    await fake.release();
    await expect(Promise.all(results)).resolves.toEqual(["ok", "even 2", "ok"]);
  });

  it("keeps up to `concurrency` sends under way: items go alone until then, then together when one ends", async () => {
    const fake = fakeSend();
    const group = createGroupCommit({ send: fake.send, concurrency: 2 });
    const all = [1, 2, 3, 4, 5].map((n) => group.add(n));
    expect(fake.batches).toEqual([[1], [2]]);
    await fake.release();
    expect(fake.batches).toEqual([[1], [2], [3, 4, 5]]);
    await fake.release();
    await fake.release();
    await Promise.all(all);
    const more = group.add(6);
    expect(fake.batches).toHaveLength(4);
    await fake.release();
    await more;
  });

  it("takes concurrency below 1 as 1", async () => {
    const fake = fakeSend();
    const group = createGroupCommit({ send: fake.send, concurrency: 0 });
    const all = [1, 2].map((n) => group.add(n));
    expect(fake.batches).toEqual([[1]]);
    await fake.release();
    await fake.release();
    await Promise.all(all);
    expect(fake.batches).toEqual([[1], [2]]);
  });

  it("lets a send under way longer than `slotMs` give up its slot; it still settles its own callers", async () => {
    jest.useFakeTimers({ doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });
    try {
      const fake = fakeSend();
      const group = createGroupCommit({ send: fake.send, slotMs: 40 });
      let slowDone = false;
      const slow = group.add(1).then(() => {
        slowDone = true;
      });
      const queued = [2, 3].map((n) => group.add(n));
      jest.advanceTimersByTime(39);
      expect(fake.batches).toEqual([[1]]);
      jest.advanceTimersByTime(1);
      expect(fake.batches).toEqual([[1], [2, 3]]);
      expect(slowDone).toBe(false);
      // The slow send ends first: it settles its callers and gives back nothing (its slot is gone already), so the
      // next item waits for the send that holds the only slot.
      await fake.release();
      await slow;
      const next = group.add(4);
      expect(fake.batches).toEqual([[1], [2, 3]]);
      await fake.release();
      await Promise.all(queued);
      expect(fake.batches).toEqual([[1], [2, 3], [4]]);
      await fake.release();
      await next;
    } finally {
      jest.useRealTimers();
    }
  });

  it("keeps the slot of a send that ends within `slotMs`, and leaves no timer behind", async () => {
    jest.useFakeTimers({ doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });
    try {
      const fake = fakeSend();
      const group = createGroupCommit({ send: fake.send, slotMs: 40 });
      const first = group.add(1);
      const second = group.add(2);
      jest.advanceTimersByTime(10);
      await fake.release();
      await first;
      expect(fake.batches).toEqual([[1], [2]]);
      jest.advanceTimersByTime(39);
      const third = group.add(3);
      expect(fake.batches).toEqual([[1], [2]]);
      await fake.release();
      await second;
      expect(fake.batches).toEqual([[1], [2], [3]]);
      await fake.release();
      await third;
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it("with `lingerMs` starts at most one send per lingerMs: a lone item goes at once, those close behind together", async () => {
    jest.useFakeTimers({ now: 0, doNotFake: ["setImmediate", "nextTick", "queueMicrotask"] });
    try {
      const fake = fakeSend();
      const group = createGroupCommit({ send: fake.send, lingerMs: 200, maxSize: 3, concurrency: 4 });
      const first = group.add(1);
      expect(fake.batches).toEqual([[1]]);
      await fake.release();
      await first;
      // Within 200 ms of that send: these wait until 200 ms after it, together.
      jest.advanceTimersByTime(50);
      const next = [group.add(2), group.add(3)];
      jest.advanceTimersByTime(149);
      expect(fake.batches).toEqual([[1]]);
      jest.advanceTimersByTime(1);
      expect(fake.batches).toEqual([[1], [2, 3]]);
      // A full batch does not wait; what is left waits for the next window.
      const more = [group.add(4), group.add(5), group.add(6), group.add(7)];
      expect(fake.batches).toEqual([[1], [2, 3], [4, 5, 6]]);
      jest.advanceTimersByTime(200);
      expect(fake.batches).toEqual([[1], [2, 3], [4, 5, 6], [7]]);
      for (let i = 0; i < 3; i++) await fake.release();
      await Promise.all([...next, ...more]);
      // Long after the last send, a lone item goes at once again.
      jest.advanceTimersByTime(1_000);
      const late = group.add(8);
      expect(fake.batches).toEqual([[1], [2, 3], [4, 5, 6], [7], [8]]);
      await fake.release();
      await late;
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
