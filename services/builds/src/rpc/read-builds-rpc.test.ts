import { create } from "@bufbuild/protobuf";
import { Code, type ConnectError, type HandlerContext } from "@connectrpc/connect";
import { BuildReadSchema, ReadBuildsRequestSchema, ReadBuildsResponseSchema } from "@conveyor/proto/builds";
import { callErrorFrom, currentRequestId, fieldErrorsOf, invalidFields, notFound } from "@conveyor/runtime";
import { createReadBuildsRpc, MAX_READS_PER_CALL } from "./read-builds-rpc.js";

const context = {} as HandlerContext;

/** Reads that record the request id they ran under; number 404 is missing, any state filter invalid. */
function fakeReads() {
  const seen: string[] = [];
  return {
    seen,
    reads: createReadBuildsRpc({
      getBuild: async (req) => {
        seen.push(`get ${req.number} ${currentRequestId() ?? "-"}`);
        if (req.number === 404) throw notFound("build");
        if (req.number === 500) throw new Error("boom");
        return { version: `v${req.number}` };
      },
      listBuilds: async (req) => {
        seen.push(`list ${req.pipelineId} ${currentRequestId() ?? "-"}`);
        if (req.states.length > 0) throw invalidFields([{ field: "state", code: "is not a build state" }]);
        return { version: `page-${req.pipelineId}`, hasMore: true };
      },
    }),
  };
}

type ReadInit = Parameters<typeof create<typeof BuildReadSchema>>[1];
const request = (reads: ReadInit[]) =>
  create(ReadBuildsRequestSchema, { reads: reads.map((r) => create(BuildReadSchema, r)) });
/** A ReadBuilds call, its answer as a client decodes it. */
const call = async (fake: ReturnType<typeof fakeReads>, reads: ReadInit[]) =>
  create(ReadBuildsResponseSchema, await fake.reads.readBuilds(request(reads), context));

describe("ReadBuilds", () => {
  it("answers each read in order with its own handler, in its own request's context", async () => {
    const fake = fakeReads();
    const res = await call(fake, [
      { read: { case: "get", value: { pipelineId: "p", number: 2 } }, requestId: "req-a" },
      { read: { case: "list", value: { pipelineId: "p" } }, requestId: "req-b" },
      { read: { case: "get", value: { pipelineId: "p", number: 3 } } },
    ]);
    expect(res.results.map((r) => r.result?.case)).toEqual(["get", "list", "get"]);
    expect(res.results.map((r) => (r.result?.value as { version?: string } | undefined)?.version)).toEqual([
      "v2",
      "page-p",
      "v3",
    ]);
    expect(fake.seen).toEqual(["get 2 req-a", "list p req-b", "get 3 -"]);
  });

  it("fails a read alone, with the error its own call would have ended with", async () => {
    const fake = fakeReads();
    const res = await call(fake, [
      { read: { case: "get", value: { pipelineId: "p", number: 404 } } },
      { read: { case: "list", value: { pipelineId: "p", states: ["x"] } } },
      { read: { case: "get", value: { pipelineId: "p", number: 500 } } },
      { read: { case: "get", value: { pipelineId: "p", number: 1 } } },
      {},
    ]);
    const errors = res.results.map((r) => (r.result?.case === "error" ? callErrorFrom(r.result.value) : undefined));
    expect(errors[0]?.code).toBe(Code.NotFound);
    expect(errors[1]?.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(errors[1] as ConnectError)).toEqual([{ field: "state", code: "is not a build state" }]);
    expect(errors[2]).toMatchObject({ code: Code.Unknown, rawMessage: "boom" });
    expect(res.results[3]?.result?.case).toBe("get");
    expect(errors[4]?.code).toBe(Code.InvalidArgument);
  });

  it(`refuses more than ${MAX_READS_PER_CALL} reads in one call`, async () => {
    const fake = fakeReads();
    const reads = Array.from({ length: MAX_READS_PER_CALL + 1 }, (_, i) => ({
      read: { case: "get" as const, value: { pipelineId: "p", number: i + 1 } },
    }));
    await expect(call(fake, reads)).rejects.toMatchObject({ code: Code.InvalidArgument });
    expect(fake.seen).toEqual([]);
    const most = await call(fake, reads.slice(1));
    expect(most.results).toHaveLength(MAX_READS_PER_CALL);
  });
});
