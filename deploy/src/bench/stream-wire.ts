/**
 * The wire of StreamPings as a simulated agent speaks it (the `streams` bench row): gRPC's length-prefixed messages
 * (a flag byte, a 4-byte big-endian length, the protobuf bytes) carrying agentedge.v1's StreamPingsRequest and
 * StreamPingsResponse, as buildkite-agent v3.137 and the gateway speak them (docs/compatibility.md#streaming-pings).
 * Written by hand, as the gateway's own (it is not generated from a .proto in this repository): only
 * length-delimited fields occur.
 */

/** One action a StreamPingsResponse carries (its oneof, fields 2 to 5). */
export type PingAction =
  | { kind: "resume" }
  | { kind: "pause"; reason: string }
  | { kind: "disconnect"; reason: string }
  | { kind: "job_assigned"; jobId: string };

function varint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** Frames one message. */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** A framed StreamPingsRequest naming the agent (field 1). */
export function requestFrame(agentId: string): Buffer {
  const id = Buffer.from(agentId);
  return frame(Buffer.from([0x0a, ...varint(id.length), ...id]));
}

/** The length-delimited fields of a message, by number (the last of each); a field of another wire type throws. */
function fields(bytes: Uint8Array): Map<number, Uint8Array> {
  const out = new Map<number, Uint8Array>();
  let at = 0;
  const read = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const b = bytes[at++];
      if (b === undefined) throw new Error("truncated varint");
      value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
  };
  while (at < bytes.length) {
    const tag = read();
    if ((tag & 7) !== 2) throw new Error(`field ${tag >>> 3}: wire type ${tag & 7} is not expected`);
    const length = read();
    if (at + length > bytes.length) throw new Error("truncated field");
    out.set(tag >>> 3, bytes.subarray(at, at + length));
    at += length;
  }
  return out;
}

const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString("utf8");

/** The action of a StreamPingsResponse's bytes; undefined when it carries none. */
export function decodeAction(bytes: Uint8Array): PingAction | undefined {
  const f = fields(bytes);
  if (f.has(5)) {
    const job = fields(f.get(5) ?? new Uint8Array()).get(1);
    return { kind: "job_assigned", jobId: text(fields(job ?? new Uint8Array()).get(1)) };
  }
  if (f.has(4)) return { kind: "disconnect", reason: text(fields(f.get(4) ?? new Uint8Array()).get(1)) };
  if (f.has(3)) return { kind: "pause", reason: text(fields(f.get(3) ?? new Uint8Array()).get(1)) };
  if (f.has(2)) return { kind: "resume" };
  return undefined;
}

/** Splits the framed messages out of what arrived so far: the messages and the bytes of an incomplete one. */
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
