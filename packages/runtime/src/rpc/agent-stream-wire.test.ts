import {
  decodeAction,
  decodeRequest,
  encodeAction,
  encodeRequest,
  frame,
  type StreamAction,
  unframe,
} from "./agent-stream-wire.js";

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

// Frames the gateway writes (frame(encodeAction(…))), as hex: what a simulated agent of the bench reads.
const RESUME = "00000000021200";
const PAUSE = "00000000111a0f0a0d5061757365643a206c756e6368";
const DISCONNECT = "000000000722050a03627965";
const JOB = "000000002a2a280a260a2430313930613162322d633364342d376535662d386139622d306331643265336634613562";

describe("streaming pings' wire, byte for byte", () => {
  it("frames each action as these bytes", () => {
    expect(frame(encodeAction({ kind: "resume" })).toString("hex")).toBe(RESUME);
    expect(frame(encodeAction({ kind: "pause", reason: "Paused: lunch" })).toString("hex")).toBe(PAUSE);
    expect(frame(encodeAction({ kind: "disconnect", reason: "bye" })).toString("hex")).toBe(DISCONNECT);
    expect(
      frame(encodeAction({ kind: "job_assigned", jobId: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" })).toString("hex"),
    ).toBe(JOB);
  });

  it("keeps an incomplete frame for the next chunk", () => {
    const bytes = Buffer.from(RESUME + JOB, "hex");
    const first = unframe(bytes.subarray(0, 20));
    expect(first.messages.map((m) => decodeAction(m))).toEqual([{ kind: "resume" }]);
    const second = unframe(Buffer.concat([first.rest, bytes.subarray(20)]));
    expect(second.messages.map((m) => decodeAction(m)?.kind)).toEqual(["job_assigned"]);
    expect(second.rest.length).toBe(0);
  });

  it("writes the request with a long id's length as a varint", () => {
    expect(frame(encodeRequest("agent-1")).toString("hex")).toBe("00000000090a076167656e742d31");
    const long = frame(encodeRequest("a".repeat(200)));
    expect(long.readUInt32BE(1)).toBe(203);
    expect([...long.subarray(5, 8)]).toEqual([0x0a, 0xc8, 0x01]);
  });

  it("refuses a truncated message", () => {
    expect(() => decodeAction(Buffer.from("2a2a280a", "hex"))).toThrow();
  });
});
