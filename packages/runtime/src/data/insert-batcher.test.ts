import { createGates } from "../concurrency/test-gates.js";
import { isDuplicateKeyError } from "./duplicate-key.js";
import { createInsertBatcher } from "./insert-batcher.js";

/** A fake insertMany: records each command's documents; `answer` decides how each command ends. */
function fakeInsert(answer: (docs: string[]) => Promise<unknown> = async () => undefined) {
  const calls: string[][] = [];
  const gates = createGates();
  const insertMany = async (docs: string[]) => {
    calls.push([...docs]);
    await gates.wait();
    return answer(docs);
  };
  // `release` lets the oldest command under way finish.
  return { calls, insertMany, release: gates.openOldest };
}

function bulkError(writeErrors: Array<{ index: number; code: number; errmsg: string }>) {
  return Object.assign(new Error("bulk write failed"), { writeErrors });
}

describe("createInsertBatcher", () => {
  it("sends a lone insert at once", async () => {
    const fake = fakeInsert();
    const batcher = createInsertBatcher(fake.insertMany);
    const done = batcher.insert(["a"]);
    expect(fake.calls).toEqual([["a"]]);
    await fake.release();
    await expect(done).resolves.toBeUndefined();
  });

  it("sends every insert that arrived meanwhile in one command, in arrival order", async () => {
    const fake = fakeInsert();
    const batcher = createInsertBatcher(fake.insertMany);
    const first = batcher.insert(["a"]);
    const rest = [batcher.insert(["b", "c"]), batcher.insert(["d"]), batcher.insert(["e"])];
    expect(fake.calls).toEqual([["a"]]);
    await fake.release();
    expect(fake.calls).toEqual([["a"], ["b", "c", "d", "e"]]);
    await fake.release();
    await expect(Promise.all([first, ...rest])).resolves.toHaveLength(4);
  });

  it("hands a document's write error to its caller only, as an error isDuplicateKeyError tells", async () => {
    const fake = fakeInsert(async (docs) => {
      if (docs.length > 1) throw bulkError([{ index: 2, code: 11000, errmsg: "E11000 duplicate key error" }]);
    });
    const batcher = createInsertBatcher(fake.insertMany);
    const first = batcher.insert(["a"]);
    const ok1 = batcher.insert(["b", "c"]);
    const dup = batcher.insert(["d", "e"]).catch((e: unknown) => e);
    const ok2 = batcher.insert(["f"]);
    await fake.release();
    await fake.release();
    await expect(first).resolves.toBeUndefined();
    await expect(ok1).resolves.toBeUndefined();
    await expect(ok2).resolves.toBeUndefined();
    const err = await dup;
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe("E11000 duplicate key error");
    expect(isDuplicateKeyError(err)).toBe(true);
  });

  it("fails every caller of a command that failed as a whole, and goes on with the next", async () => {
    const fake = fakeInsert(async (docs) => {
      if (!docs.includes("d")) throw new Error("connection closed");
    });
    const batcher = createInsertBatcher(fake.insertMany);
    const block = batcher.insert(["a"]).catch((e: unknown) => e);
    const both = [batcher.insert(["b"]), batcher.insert(["c"])].map((p) => p.catch((e: unknown) => e));
    await fake.release();
    expect(await block).toEqual(new Error("connection closed"));
    const later = batcher.insert(["d"]);
    await fake.release();
    await fake.release();
    for (const p of both) expect(await p).toEqual(new Error("connection closed"));
    await expect(later).resolves.toBeUndefined();
    expect(fake.calls).toEqual([["a"], ["b", "c"], ["d"]]);
  });

  it("treats a bulk error without document errors (a write concern not met) as the command's failure", async () => {
    const fake = fakeInsert(async () => {
      throw Object.assign(new Error("write concern"), { writeErrors: [] });
    });
    const batcher = createInsertBatcher(fake.insertMany);
    const p = batcher.insert(["a"]).catch((e: unknown) => e);
    await fake.release();
    expect(await p).toEqual(new Error("write concern"));
  });

  it("splits at maxDocs between callers, never inside one caller's documents", async () => {
    const fake = fakeInsert();
    const batcher = createInsertBatcher(fake.insertMany, { maxDocs: 3 });
    const all = [
      batcher.insert(["a"]),
      batcher.insert(["b", "c"]),
      batcher.insert(["d", "e"]),
      batcher.insert(["f", "g", "h", "i"]),
    ];
    for (let i = 0; i < 4; i++) await fake.release();
    await Promise.all(all);
    expect(fake.calls).toEqual([["a"], ["b", "c"], ["d", "e"], ["f", "g", "h", "i"]]);
  });

  it("fills a command up to maxDocs", async () => {
    const fake = fakeInsert();
    const batcher = createInsertBatcher(fake.insertMany, { maxDocs: 4 });
    const all = ["a", "b", "c", "d", "e", "f"].map((d) => batcher.insert([d]));
    for (let i = 0; i < 3; i++) await fake.release();
    await Promise.all(all);
    expect(fake.calls).toEqual([["a"], ["b", "c", "d", "e"], ["f"]]);
  });

  it("resolves an empty insert without a command, and survives an insertMany that throws synchronously", async () => {
    const batcher = createInsertBatcher<string>(() => {
      throw new Error("no collection");
    });
    await expect(batcher.insert([])).resolves.toBeUndefined();
    await expect(batcher.insert(["a"])).rejects.toThrow("no collection");
    await expect(batcher.insert(["b"])).rejects.toThrow("no collection");
  });
});
