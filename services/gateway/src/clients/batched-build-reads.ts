/**
 * The builds client with its reads batched: GetBuild and ListBuilds calls made while others are under way go to
 * the builds service together, in one ReadBuilds call (group commit). Under load, pollers of builds and pages cost
 * one call's fixed cost (an HTTP/2 stream, headers, signals, on both sides) per batch instead of one each; a lone
 * read goes at once, alone. Nothing is answered from here: every read is answered by the builds service in a call
 * that began after the read was asked for, so what it returns is as fresh as its own call's answer would have been.
 *
 * Each read keeps its own outcome: its answer, or the error its own call would have ended with. A ReadBuilds call
 * that fails as a whole (the service unreachable) fails each of its reads with that error. A read's own timeout and
 * signal are not carried: the batch has the client's default timeout. A builds service without ReadBuilds (an older
 * replica during a rolling upgrade) gets each read as its own call.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";
import type {
  BuildReadResult,
  BuildReadSchema,
  BuildsService,
  GetBuildRequestSchema,
  ListBuildsRequestSchema,
} from "@conveyor/proto/builds";
import { type Client, callErrorFrom, currentRequestId, REQUEST_ID_HEADER } from "@conveyor/runtime";
import { createBatchedCall } from "./batched-calls.js";

/** Reads per ReadBuilds call at most (the service takes up to 100). */
const MAX_BATCH = 50;
/** ReadBuilds calls under way at once: a slow read (a page read from the database) holds back only its own batch. */
const CALLS_UNDER_WAY = 4;
/**
 * A call under way longer than this (ms) gives up its slot, so reads of every organization share the calls under way
 * without one slow read (an org-wide page scanning many builds) holding back the others for longer than this.
 */
const SLOT_MS = 40;

export interface BatchOptions {
  /** A call under way longer than this (ms) gives up its slot (default 40; config BATCH_SLOT_MS). */
  slotMs?: number;
}

type Read = MessageInitShape<typeof BuildReadSchema>;
type ReadResult = BuildReadResult["result"];

/** The request id a call names in its headers, else the one of the context it is made in (as propagateRequestId). */
function requestIdOf(options: CallOptions | undefined): string {
  return new Headers(options?.headers).get(REQUEST_ID_HEADER) ?? currentRequestId() ?? "";
}

/** `client` with getBuild and listBuilds going through ReadBuilds batches; every other method as it is. */
export function batchBuildReads(
  client: Client<typeof BuildsService>,
  opts: BatchOptions = {},
): Client<typeof BuildsService> {
  const call = createBatchedCall<Read, ReadResult>({
    name: "ReadBuilds",
    maxSize: MAX_BATCH,
    concurrency: CALLS_UNDER_WAY,
    slotMs: opts.slotMs ?? SLOT_MS,
    many: async (reads) => (await client.readBuilds({ reads })).results.map((r) => r.result),
    // A read as its own call (a service without ReadBuilds).
    one: async ({ read, requestId }) => {
      const options = { headers: { [REQUEST_ID_HEADER]: requestId ?? "" } };
      if (read?.case === "get") return { case: "get", value: await client.getBuild(read.value, options) };
      if (read?.case === "list") return { case: "list", value: await client.listBuilds(read.value, options) };
      return { case: undefined };
    },
  });

  /** Sends one read with the next batch; its own answer, or its own error. */
  const read = async (init: Read["read"], options: CallOptions | undefined) => {
    const result = await call({ read: init, requestId: requestIdOf(options) });
    if (result?.case === "error") throw callErrorFrom(result.value);
    return result;
  };
  const missing = (kind: string) => new Error(`ReadBuilds answered a ${kind} read with something else`);

  return {
    ...client,
    async getBuild(req: MessageInitShape<typeof GetBuildRequestSchema>, options?: CallOptions) {
      const result = await read({ case: "get", value: req }, options);
      if (result?.case !== "get") throw missing("get");
      return result.value;
    },
    async listBuilds(req: MessageInitShape<typeof ListBuildsRequestSchema>, options?: CallOptions) {
      const result = await read({ case: "list", value: req }, options);
      if (result?.case !== "list") throw missing("list");
      return result.value;
    },
  };
}
