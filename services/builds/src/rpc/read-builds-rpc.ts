/**
 * ReadBuilds: several GetBuild and ListBuilds in one call, for the gateway, which sends the reads that arrive while
 * others are under way together (one call's fixed cost, its HTTP/2 stream, headers and signals, for many reads).
 * Each read is answered by the same handler as its own call, in the context of its own request id, and fails alone
 * with the error its own call would have ended with.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { BuildRead, BuildReadResultSchema, BuildsService } from "@conveyor/proto/builds";
import { callErrorValue, invalidFields, isValidRequestId, runWithRequestId } from "@conveyor/runtime";

/** The most reads one call may carry. */
export const MAX_READS_PER_CALL = 100;

type Result = MessageInitShape<typeof BuildReadResultSchema>;
type Reads = Pick<ServiceImpl<typeof BuildsService>, "getBuild" | "listBuilds">;

/** The ReadBuilds RPC over the GetBuild and ListBuilds handlers it answers each read with. */
export function createReadBuildsRpc(reads: Reads): Pick<ServiceImpl<typeof BuildsService>, "readBuilds"> {
  const answer = async (read: BuildRead, context: HandlerContext): Promise<Result> => {
    switch (read.read.case) {
      case "get":
        return { result: { case: "get", value: await reads.getBuild(read.read.value, context) } };
      case "list":
        return { result: { case: "list", value: await reads.listBuilds(read.read.value, context) } };
      default:
        throw invalidFields([{ field: "read", code: "is required" }]);
    }
  };
  const inContext = (read: BuildRead, context: HandlerContext) =>
    isValidRequestId(read.requestId)
      ? runWithRequestId(read.requestId, () => answer(read, context))
      : answer(read, context);

  return {
    async readBuilds(req, context) {
      if (req.reads.length > MAX_READS_PER_CALL) {
        throw invalidFields([{ field: "reads", code: `has more than ${MAX_READS_PER_CALL} reads` }]);
      }
      const results = await Promise.all(
        req.reads.map(async (read): Promise<Result> => {
          try {
            return await inContext(read, context);
          } catch (err) {
            return { result: { case: "error", value: callErrorValue(err) } };
          }
        }),
      );
      return { results };
    },
  };
}
