import { createKeyedLock } from "@conveyor/runtime";
import type { BuildWithJobs } from "./reconcile.js";
import { createReconcileCoalescer } from "./reconcile-coalescer.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 2));

/** A reconcile that counts its runs and answers the run's number as the build's version. */
function counting(fail?: (run: number) => boolean) {
  const runs: Array<{ buildId: string; startedAt: number }> = [];
  let clock = 0;
  const reconcile = async (buildId: string): Promise<BuildWithJobs> => {
    runs.push({ buildId, startedAt: ++clock });
    const run = runs.length;
    await tick();
    if (fail?.(run)) throw new Error(`run ${run} failed`);
    return { build: { id: buildId, version: run } as never, jobs: [] };
  };
  return { runs, reconcile, now: () => clock };
}

describe("createReconcileCoalescer", () => {
  it("gives callers that ask while a reconcile runs one shared reconcile that began after they asked", async () => {
    const { runs, reconcile } = counting();
    const after = createReconcileCoalescer(createKeyedLock(), reconcile);
    const first = after("b");
    await new Promise((resolve) => setImmediate(resolve));
    const others = Array.from({ length: 10 }, () => after("b"));
    const answers = await Promise.all([first, ...others]);
    expect(runs).toHaveLength(2);
    expect(answers[0]?.build.version).toBe(1);
    expect(answers.slice(1).every((a) => a.build.version === 2)).toBe(true);
  });

  it("reconciles each build apart, and again for a caller that asks after the last one ended", async () => {
    const { runs, reconcile } = counting();
    const after = createReconcileCoalescer(createKeyedLock(), reconcile);
    await Promise.all([after("a"), after("b")]);
    expect(runs.map((r) => r.buildId).sort()).toEqual(["a", "b"]);
    expect((await after("a")).build.version).toBe(3);
  });

  it("fails the callers of a failed reconcile, and serves the next ones", async () => {
    const { reconcile } = counting((run) => run === 1);
    const after = createReconcileCoalescer(createKeyedLock(), reconcile);
    await expect(after("b")).rejects.toThrow("run 1 failed");
    expect((await after("b")).build.version).toBe(2);
  });

  it("runs under the build's lock, after the writes that hold it", async () => {
    const { runs, reconcile } = counting();
    const withLock = createKeyedLock();
    const after = createReconcileCoalescer(withLock, reconcile);
    const order: string[] = [];
    const write = withLock("b", async () => {
      await tick();
      order.push("write");
    });
    const reconciled = after("b").then(() => order.push("reconcile"));
    await Promise.all([write, reconciled]);
    expect(order).toEqual(["write", "reconcile"]);
    expect(runs).toHaveLength(1);
  });
});
