import type { Collection } from "mongodb";
import { createLeaseLock, type LeaseDoc } from "./lease-lock.js";

/** A collection whose inserts succeed and whose deletes fail as `deleteError` says (the release's only call). */
function fakeLeases(deleteError: Error) {
  const inserted: LeaseDoc[] = [];
  const collection = {
    async insertOne(doc: LeaseDoc) {
      inserted.push(doc);
      return { acknowledged: true, insertedId: doc._id };
    },
    async deleteOne() {
      throw deleteError;
    },
  } as unknown as Collection<LeaseDoc>;
  return { collection, inserted };
}

describe("createLeaseLock's release", () => {
  it("reports a holding it could not release and still answers with the work's result", async () => {
    const down = new Error("connection reset");
    const { collection, inserted } = fakeLeases(down);
    const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
    const logger = { warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }) };
    const lock = createLeaseLock(collection, { leaseMs: 5_000, logger: logger as never });

    await expect(lock("team:t1", async () => "done")).resolves.toBe("done");

    expect(inserted.map((d) => d._id)).toEqual(["team:t1"]);
    expect(warnings).toEqual([
      { obj: { err: down, key: "team:t1", leaseMs: 5_000 }, msg: "lease not released; it lapses after leaseMs" },
    ]);
  });
});
