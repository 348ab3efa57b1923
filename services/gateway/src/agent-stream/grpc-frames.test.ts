import {
  decodeAction,
  decodeRequest,
  encodeAction,
  encodeRequest,
  frame,
  type StreamAction,
  unframe,
} from "./grpc-frames.js";
import { agentQueue, mayTake } from "./stream-queue.js";

describe("streaming pings' wire", () => {
  it.each<StreamAction>([
    { kind: "resume" },
    { kind: "pause", reason: "Paused: upgrading" },
    { kind: "disconnect", reason: "This agent was asked to stop." },
    { kind: "job_assigned", jobId: "0190c0de-0000-7000-8000-000000000001" },
  ])("encodes and decodes %j", (action) => {
    expect(decodeAction(encodeAction(action))).toEqual(action);
  });

  it("writes the oneof's field numbers of agentedge.proto (resume 2, pause 3, disconnect 4, job_assigned 5)", () => {
    expect([...encodeAction({ kind: "resume" })]).toEqual([0x12, 0x00]);
    expect([...encodeAction({ kind: "job_assigned", jobId: "j" })]).toEqual([0x2a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0x6a]);
  });

  it("frames messages with a flag byte and a big-endian length, and splits them back", () => {
    const a = frame(encodeAction({ kind: "resume" }));
    const b = frame(encodeAction({ kind: "pause", reason: "x" }));
    expect([...a]).toEqual([0, 0, 0, 0, 2, 0x12, 0x00]);
    const { messages, rest } = unframe(Buffer.concat([a, b, b.subarray(0, 3)]));
    expect(messages.map((m) => decodeAction(m))).toEqual([{ kind: "resume" }, { kind: "pause", reason: "x" }]);
    expect(rest.length).toBe(3);
  });

  it("reads the request's agent id, refusing compressed, oversized, truncated or trailing bodies", () => {
    const ok = frame(encodeRequest("agent-1"));
    expect(decodeRequest(ok)).toBe("agent-1");
    expect(decodeRequest(Buffer.from([1, ...ok.subarray(1)]))).toBeUndefined();
    expect(decodeRequest(ok.subarray(0, ok.length - 1))).toBeUndefined();
    expect(decodeRequest(Buffer.concat([ok, Buffer.from([0])]))).toBeUndefined();
    expect(decodeRequest(frame(encodeRequest("a".repeat(2000))))).toBeUndefined();
    expect(decodeRequest(Buffer.alloc(3))).toBeUndefined();
    expect(decodeRequest(frame(new Uint8Array([0xff, 0xff])))).toBeUndefined();
  });
});

describe("stream queues", () => {
  it("takes an agent's queue tag, default without one", () => {
    expect(agentQueue(["queue=linux", "os=x"])).toBe("linux");
    expect(agentQueue(["os=x"])).toBe("default");
  });
  it("matches a job's queue rule exactly, any queue for a pattern, default without one", () => {
    expect(mayTake("linux", ["queue=linux"])).toBe(true);
    expect(mayTake("linux", ["queue=mac"])).toBe(false);
    expect(mayTake("linux", ["queue=lin*"])).toBe(true);
    expect(mayTake("default", ["os=x"])).toBe(true);
    expect(mayTake("linux", [])).toBe(false);
  });
});
