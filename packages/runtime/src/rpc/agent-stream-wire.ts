import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";

/**
 * The wire of the agent's streaming pings (agentedge.v1.AgentEdgeService/StreamPings, as buildkite-agent v3.137
 * speaks it with connect-go's gRPC protocol): length-prefixed messages (one flag byte, a 4-byte big-endian length,
 * the protobuf bytes), the status in the trailers. The messages are small enough to be written by hand rather than
 * generated: a request naming the agent, and answers carrying one action.
 */

/** One action of StreamPingsResponse's oneof (fields 2 to 5). */
export type StreamAction =
  | { kind: "resume" }
  | { kind: "pause"; reason: string }
  | { kind: "disconnect"; reason: string }
  | { kind: "job_assigned"; jobId: string };

/** The largest request message taken (it only names an agent). */
export const MAX_REQUEST_BYTES = 1024;

/** gRPC status codes the stream answers with (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GRPC_STATUS = {
  ok: 0,
  invalidArgument: 3,
  permissionDenied: 7,
  resourceExhausted: 8,
  unimplemented: 12,
  unavailable: 14,
  unauthenticated: 16,
} as const;

/** Frames one message. */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt8(0, 0);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** A message holding `value` (a string, or a message's bytes) in its field 1: the shape of every action's payload. */
function withFieldOne(value: string | Uint8Array): Uint8Array {
  const w = new BinaryWriter().uint32((1 << 3) | 2);
  return (typeof value === "string" ? w.string(value) : w.bytes(value)).finish();
}

/** StreamPingsResponse's bytes for one action: the oneof's field (2 to 5) holding the action's message. */
export function encodeAction(action: StreamAction): Uint8Array {
  const [field, payload] =
    action.kind === "resume"
      ? [2, new Uint8Array(0)]
      : action.kind === "pause"
        ? [3, withFieldOne(action.reason)]
        : action.kind === "disconnect"
          ? [4, withFieldOne(action.reason)]
          : [5, withFieldOne(withFieldOne(action.jobId))];
  return new BinaryWriter()
    .uint32((field << 3) | 2)
    .bytes(payload)
    .finish();
}

/** The bytes of a message's field 1 (a string or a message); empty when absent. */
function fieldOne(bytes: Uint8Array): Uint8Array {
  const r = new BinaryReader(bytes);
  let found: Uint8Array = new Uint8Array(0);
  while (r.pos < r.len) {
    const [field, type] = r.tag();
    if (field === 1 && type === 2) found = r.bytes();
    else r.skip(type);
  }
  return found;
}

const text = new TextDecoder();

/** Decodes StreamPingsResponse (for tests and the bench's simulated agents); undefined when it carries no action. */
export function decodeAction(bytes: Uint8Array): StreamAction | undefined {
  const r = new BinaryReader(bytes);
  let action: StreamAction | undefined;
  while (r.pos < r.len) {
    const [field, type] = r.tag();
    if (type !== 2) {
      r.skip(type);
      continue;
    }
    const inner = r.bytes();
    if (field === 2) action = { kind: "resume" };
    else if (field === 3) action = { kind: "pause", reason: text.decode(fieldOne(inner)) };
    else if (field === 4) action = { kind: "disconnect", reason: text.decode(fieldOne(inner)) };
    else if (field === 5) action = { kind: "job_assigned", jobId: text.decode(fieldOne(fieldOne(inner))) };
  }
  return action;
}

/** StreamPingsRequest's bytes (for tests and the bench's simulated agents). */
export function encodeRequest(agentId: string): Uint8Array {
  return withFieldOne(agentId);
}

/**
 * The agent id of a framed StreamPingsRequest body; undefined when the body is not one uncompressed message of at
 * most MAX_REQUEST_BYTES.
 */
export function decodeRequest(body: Buffer): string | undefined {
  if (body.length < 5 || body[0] !== 0) return undefined;
  const length = body.readUInt32BE(1);
  if (length > MAX_REQUEST_BYTES || body.length !== 5 + length) return undefined;
  try {
    return text.decode(fieldOne(body.subarray(5)));
  } catch {
    return undefined;
  }
}

/** Splits framed messages out of a buffer (for tests and simulated agents): the messages and what is left over. */
export function unframe(buffer: Buffer): { messages: Buffer[]; rest: Buffer } {
  const messages: Buffer[] = [];
  let at = 0;
  while (buffer.length - at >= 5) {
    const length = buffer.readUInt32BE(at + 1);
    if (buffer.length - at - 5 < length) break;
    messages.push(buffer.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return { messages, rest: buffer.subarray(at) };
}
