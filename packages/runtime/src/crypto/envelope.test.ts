import { randomBytes } from "node:crypto";
import { EnvelopeKeyError, keyRingFrom, openValue, rewrapValue, sealValue } from "./envelope.js";

const b64 = () => randomBytes(32).toString("base64");
const KIND = { record: "cluster-secret", value: "secret value" };
const flip = (text: string, at: number) => {
  const bytes = Buffer.from(text, "base64");
  bytes[at % bytes.length] = (bytes[at % bytes.length] ?? 0) ^ 1;
  return bytes.toString("base64");
};

describe("envelopes", () => {
  const ring = keyRingFrom(b64(), "");

  it("open to what was sealed, and never hold it in clear", () => {
    const envelope = sealValue(ring, KIND, "o/c/s", "hunter2-value");
    expect(JSON.stringify(envelope)).not.toContain("hunter2");
    expect(openValue(ring, KIND, "o/c/s", envelope)).toBe("hunter2-value");
  });

  it("seal the same value differently each time", () => {
    expect(sealValue(ring, KIND, "b", "v").ciphertext).not.toBe(sealValue(ring, KIND, "b", "v").ciphertext);
  });

  it.each([0, 5, 20, 40])("refuse a ciphertext altered at byte %p", (at) => {
    const envelope = sealValue(ring, KIND, "b", "some value");
    expect(() => openValue(ring, KIND, "b", { ...envelope, ciphertext: flip(envelope.ciphertext, at) })).toThrow(
      EnvelopeKeyError,
    );
  });

  it("refuse a wrapped key altered", () => {
    const envelope = sealValue(ring, KIND, "b", "some value");
    expect(() => openValue(ring, KIND, "b", { ...envelope, wrappedKey: flip(envelope.wrappedKey, 30) })).toThrow(
      /does not open/,
    );
  });

  it("refuse a too-short envelope", () => {
    const envelope = sealValue(ring, KIND, "b", "v");
    expect(() => openValue(ring, KIND, "b", { ...envelope, ciphertext: "AAAA" })).toThrow(/too short/);
  });

  it("refuse another record's binding, or another kind of record", () => {
    const envelope = sealValue(ring, KIND, "o/c/s1", "v");
    expect(() => openValue(ring, KIND, "o/c/s2", envelope)).toThrow(EnvelopeKeyError);
    expect(() => openValue(ring, { record: "source-provider", value: "credential" }, "o/c/s1", envelope)).toThrow(
      EnvelopeKeyError,
    );
  });

  it("refuse a key the ring does not hold, naming it", () => {
    const envelope = sealValue(ring, KIND, "b", "v");
    expect(() => openValue(keyRingFrom(b64(), ""), KIND, "b", envelope)).toThrow(
      `the secret value was sealed with key ${ring.current.id}`,
    );
  });

  it("move to a new key by rewrapping the data key alone", () => {
    const old = b64();
    const before = keyRingFrom(old, "");
    const envelope = sealValue(before, KIND, "b", "v");
    const after = keyRingFrom(b64(), old);
    const moved = rewrapValue(after, KIND, "b", envelope);
    expect(moved.keyId).toBe(after.current.id);
    expect(moved.ciphertext).toBe(envelope.ciphertext);
    expect(openValue(keyRingFrom(Buffer.from(after.current.key).toString("base64"), ""), KIND, "b", moved)).toBe("v");
    expect(rewrapValue(after, KIND, "b", moved)).toBe(moved);
  });
});
