import { decodeAction, requestFrame, unframe } from "./stream-wire.js";

// Frames the gateway writes (services/gateway/src/agent-stream/grpc-frames.ts, frame(encodeAction(…))), as hex.
const RESUME = "00000000021200";
const PAUSE = "00000000111a0f0a0d5061757365643a206c756e6368";
const DISCONNECT = "000000000722050a03627965";
const JOB = "000000002a2a280a260a2430313930613162322d633364342d376535662d386139622d306331643265336634613562";

const one = (hex: string) => {
  const { messages, rest } = unframe(Buffer.from(hex, "hex"));
  expect(rest.length).toBe(0);
  expect(messages).toHaveLength(1);
  return decodeAction(messages[0] as Buffer);
};

describe("stream wire", () => {
  it("decodes each action the gateway sends", () => {
    expect(one(RESUME)).toEqual({ kind: "resume" });
    expect(one(PAUSE)).toEqual({ kind: "pause", reason: "Paused: lunch" });
    expect(one(DISCONNECT)).toEqual({ kind: "disconnect", reason: "bye" });
    expect(one(JOB)).toEqual({ kind: "job_assigned", jobId: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" });
  });

  it("keeps an incomplete frame for the next chunk", () => {
    const bytes = Buffer.from(RESUME + JOB, "hex");
    const first = unframe(bytes.subarray(0, 20));
    expect(first.messages.map((m) => decodeAction(m))).toEqual([{ kind: "resume" }]);
    const second = unframe(Buffer.concat([first.rest, bytes.subarray(20)]));
    expect(second.messages.map((m) => decodeAction(m)?.kind)).toEqual(["job_assigned"]);
    expect(second.rest.length).toBe(0);
  });

  it("writes the request the gateway reads, with a long id's length as a varint", () => {
    expect(requestFrame("agent-1").toString("hex")).toBe("00000000090a076167656e742d31");
    const long = requestFrame("a".repeat(200));
    expect(long.readUInt32BE(1)).toBe(203);
    expect([...long.subarray(5, 8)]).toEqual([0x0a, 0xc8, 0x01]);
  });

  it("refuses a truncated message", () => {
    expect(() => decodeAction(Buffer.from("2a2a280a", "hex"))).toThrow(/truncated/);
  });
});
