import { createKeyedLock } from "./keyed-lock.js";

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("createKeyedLock", () => {
  it("runs work of one key one at a time, in order", async () => {
    const withLock = createKeyedLock();
    let value = 0;
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withLock("k", async () => {
          const read = value;
          await tick();
          value = read + 1;
          seen.push(value);
        }),
      ),
    );
    expect(value).toBe(20);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("lets different keys run side by side and survives failures", async () => {
    const withLock = createKeyedLock();
    const order: string[] = [];
    await Promise.all([
      withLock("a", async () => {
        await tick();
        await tick();
        order.push("a");
      }),
      withLock("b", async () => {
        order.push("b");
      }),
    ]);
    expect(order).toEqual(["b", "a"]);
    await expect(withLock("a", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await withLock("a", async () => 42)).toBe(42);
  });
});
