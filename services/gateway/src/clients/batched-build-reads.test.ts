import { Code, ConnectError, createClient, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import { type BuildRead, BuildsService } from "@conveyor/proto/builds";
import { callErrorValue, fieldErrorsOf, invalidFields, notFound } from "@conveyor/runtime";
import { batchBuildReads } from "./batched-build-reads.js";

/**
 * A builds service whose ReadBuilds answers each read like the real one (getBuild by number, listBuilds by
 * pipeline), recording every call; `hold` keeps calls waiting until released.
 */
/**
 * A builds service whose calls can be held, behind batchBuildReads. Its slot limit is a minute unless `slotMs` says
 * otherwise: a loaded machine may take longer than the default 40 ms between a test's steps, and only the test of the
 * limit is about it.
 */
function fakeBuilds(opts: { readBuilds?: boolean; slotMs?: number } = {}) {
  const calls: BuildRead[][] = [];
  const alone: string[] = [];
  const gates: Array<() => void> = [];
  let holding = false;
  const getBuild: ServiceImpl<typeof BuildsService>["getBuild"] = async (req) => {
    if (req.number === 404) throw notFound("build");
    return { version: `v${req.number}`, notModified: req.ifNoneMatch === `v${req.number}` };
  };
  const listBuilds: ServiceImpl<typeof BuildsService>["listBuilds"] = async (req) => {
    if (req.states.includes("bogus")) throw invalidFields([{ field: "state", code: '"bogus" is not a build state' }]);
    return { version: `page-${req.pipelineId}`, hasMore: false };
  };
  const impl: Partial<ServiceImpl<typeof BuildsService>> = {
    getBuild: (req, ctx) => {
      alone.push(`get ${req.number} ${ctx.requestHeader.get("x-request-id")}`);
      return getBuild(req, ctx);
    },
    listBuilds: (req, ctx) => {
      alone.push(`list ${req.pipelineId}`);
      return listBuilds(req, ctx);
    },
  };
  if (opts.readBuilds !== false) {
    impl.readBuilds = async (req, ctx) => {
      calls.push(req.reads);
      if (holding) await new Promise<void>((resolve) => gates.push(resolve));
      const results = await Promise.all(
        req.reads.map(async (read) => {
          try {
            if (read.read.case === "get")
              return { result: { case: "get" as const, value: await getBuild(read.read.value, ctx) } };
            if (read.read.case === "list")
              return { result: { case: "list" as const, value: await listBuilds(read.read.value, ctx) } };
            throw new Error("no read");
          } catch (err) {
            return { result: { case: "error" as const, value: callErrorValue(err) } };
          }
        }),
      );
      return { results };
    };
  }
  const client = batchBuildReads(
    createClient(
      BuildsService,
      createRouterTransport((router) => router.service(BuildsService, impl)),
    ),
    { slotMs: opts.slotMs ?? 60_000 },
  );
  return {
    client,
    calls,
    alone,
    hold: () => {
      holding = true;
    },
    /** Later calls go through; held ones stay held. */
    letThrough: () => {
      holding = false;
    },
    releaseAll: () => {
      holding = false;
      for (const gate of gates.splice(0)) gate();
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("batchBuildReads", () => {
  it("sends a lone read at once, alone, with its request id, and returns its own answer", async () => {
    const fake = fakeBuilds();
    const res = await fake.client.getBuild({ pipelineId: "p", number: 7 }, { headers: { "x-request-id": "req-1" } });
    expect(res.version).toBe("v7");
    expect(fake.calls).toHaveLength(1);
    expect(fake.calls[0]?.map((r) => r.requestId)).toEqual(["req-1"]);
  });

  it("sends the reads that arrive while calls are under way together, each answered with its own", async () => {
    const fake = fakeBuilds();
    fake.hold();
    // Four calls may be under way: the first four go alone, the rest wait for one of them to end.
    const reads = [1, 2, 3, 4, 5, 6, 7].map((n) => fake.client.getBuild({ pipelineId: "p", number: n }));
    const page = fake.client.listBuilds({ pipelineId: "p", ifNoneMatch: "x" });
    await settle();
    expect(fake.calls.map((c) => c.length)).toEqual([1, 1, 1, 1]);
    fake.releaseAll();
    const answers = await Promise.all(reads);
    expect(answers.map((a) => a.version)).toEqual(["v1", "v2", "v3", "v4", "v5", "v6", "v7"]);
    expect((await page).version).toBe("page-p");
    expect(fake.calls.map((c) => c.length)).toEqual([1, 1, 1, 1, 4]);
  });

  it("does not hold a read back behind slow calls for longer than a few tens of ms (another tenant's slow reads)", async () => {
    const fake = fakeBuilds({ slotMs: 40 });
    fake.hold();
    const slow = [1, 2, 3, 4].map((n) => fake.client.getBuild({ pipelineId: "slow", number: n }));
    await settle();
    fake.letThrough();
    const asked = Date.now();
    const answer = await fake.client.getBuild({ pipelineId: "p", number: 5 });
    expect(answer.version).toBe("v5");
    // Without the slot's time limit it would never be answered (the slow calls end only below); the bound leaves room
    // for a CI machine busy with other suites (1 s was once passed there).
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(fake.calls.map((c) => c.length)).toEqual([1, 1, 1, 1, 1]);
    fake.releaseAll();
    expect((await Promise.all(slow)).map((a) => a.version)).toEqual(["v1", "v2", "v3", "v4"]);
  });

  it("fails only the read whose own call would have failed, with the same code, message and details", async () => {
    const fake = fakeBuilds();
    fake.hold();
    const first = [1, 2, 3, 4].map((n) => fake.client.getBuild({ pipelineId: "p", number: n }));
    const missing = fake.client.getBuild({ pipelineId: "p", number: 404 }).catch((e: unknown) => e);
    const invalid = fake.client.listBuilds({ pipelineId: "p", states: ["bogus"] }).catch((e: unknown) => e);
    const fine = fake.client.getBuild({ pipelineId: "p", number: 9, ifNoneMatch: "v9" });
    await settle();
    fake.releaseAll();
    await Promise.all(first);
    const notFoundErr = (await missing) as ConnectError;
    expect(notFoundErr).toBeInstanceOf(ConnectError);
    expect(notFoundErr.code).toBe(Code.NotFound);
    expect(notFoundErr.rawMessage).toBe("No build found");
    const invalidErr = (await invalid) as ConnectError;
    expect(invalidErr.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(invalidErr)).toEqual([{ field: "state", code: '"bogus" is not a build state' }]);
    expect(await fine).toMatchObject({ version: "v9", notModified: true });
    expect(fake.calls.at(-1)).toHaveLength(3);
  });

  it("calls each read on its own when the service has no ReadBuilds (an older replica)", async () => {
    const fake = fakeBuilds({ readBuilds: false });
    const [a, b] = await Promise.all([
      fake.client.getBuild({ pipelineId: "p", number: 3 }, { headers: { "x-request-id": "req-3" } }),
      fake.client.listBuilds({ pipelineId: "q" }),
    ]);
    expect(a.version).toBe("v3");
    expect(b.version).toBe("page-q");
    const err = await fake.client.getBuild({ pipelineId: "p", number: 404 }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect(fake.alone).toEqual(expect.arrayContaining(["get 3 req-3", "list q"]));
  });

  it("fails every read of a call that fails as a whole", async () => {
    const client = batchBuildReads(
      createClient(
        BuildsService,
        createRouterTransport((router) =>
          router.service(BuildsService, {
            readBuilds: async () => {
              throw new ConnectError("a backing service is unavailable", Code.Unavailable);
            },
          }),
        ),
      ),
    );
    const err = await client.getBuild({ pipelineId: "p", number: 1 }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
  });

  it("leaves every other method as it is", async () => {
    const fake = fakeBuilds();
    const err = await fake.client.getJob({ jobId: "j" }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.Unimplemented);
  });
});
