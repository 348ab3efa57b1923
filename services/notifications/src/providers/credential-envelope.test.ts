import { randomBytes } from "node:crypto";
import {
  CredentialKeyError,
  keyIdOf,
  keyRingFrom,
  openCredential,
  parseKey,
  rewrapCredential,
  sealCredential,
} from "./credential-envelope.js";

const b64 = () => randomBytes(32).toString("base64");
const BINDING = "org-1/conn-1";

describe("keys", () => {
  it("reads a base64 key of 32 bytes and names it by its fingerprint", () => {
    const text = b64();
    const key = parseKey("K", text);
    expect(key.key).toHaveLength(32);
    expect(key.id).toBe(keyIdOf(Buffer.from(text, "base64")));
    expect(key.id).toMatch(/^k[0-9a-f]{16}$/);
  });

  it.each([
    ["", /not base64/],
    ["not base64!", /not base64/],
    [randomBytes(16).toString("base64"), /must be 32 bytes.*not 16/],
    [randomBytes(33).toString("base64"), /must be 32 bytes.*not 33/],
  ])("refuses %p", (text, message) => {
    expect(() => parseKey("CREDENTIALS_ENCRYPTION_KEY", text)).toThrow(message);
    expect(() => parseKey("CREDENTIALS_ENCRYPTION_KEY", text)).toThrow(/CREDENTIALS_ENCRYPTION_KEY/);
  });

  it("makes a ring of the current key and the previous ones, the current left out of them", () => {
    const [a, b, c] = [b64(), b64(), b64()];
    const ring = keyRingFrom(a, ` ${b} ,, ${c},${a}`);
    expect(ring.current.id).toBe(parseKey("x", a).id);
    expect(ring.previous.map((k) => k.id)).toEqual([parseKey("x", b).id, parseKey("x", c).id]);
    expect(() => keyRingFrom(a, "short")).toThrow(/CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS \(key 1\)/);
  });
});

describe("sealing and opening", () => {
  const ring = keyRingFrom(b64(), "");

  it("opens what it sealed, and never stores the credential in the clear", () => {
    const envelope = sealCredential(ring, BINDING, "ghp_secret-token");
    expect(envelope.keyId).toBe(ring.current.id);
    expect(JSON.stringify(envelope)).not.toContain("ghp_secret-token");
    expect(Buffer.from(envelope.ciphertext, "base64").toString("utf8")).not.toContain("ghp_secret");
    expect(openCredential(ring, BINDING, envelope)).toBe("ghp_secret-token");
  });

  it("uses a new data key and IVs each time", () => {
    const a = sealCredential(ring, BINDING, "same");
    const b = sealCredential(ring, BINDING, "same");
    expect(a.wrappedKey).not.toBe(b.wrappedKey);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it("refuses to open with a wrong key (one with another id, or the same id's record under another key)", () => {
    const envelope = sealCredential(ring, BINDING, "token");
    const other = keyRingFrom(b64(), "");
    expect(() => openCredential(other, BINDING, envelope)).toThrow(CredentialKeyError);
    expect(() => openCredential(other, BINDING, envelope)).toThrow(/does not hold/);
    // An envelope claiming the other ring's key id is opened with that key, which does not fit.
    const forged = { ...envelope, keyId: other.current.id };
    expect(() => openCredential(other, BINDING, forged)).toThrow(/does not open/);
  });

  it("refuses an envelope moved to another record", () => {
    const envelope = sealCredential(ring, BINDING, "token");
    expect(() => openCredential(ring, "org-1/conn-2", envelope)).toThrow(/does not open/);
  });

  it("refuses an altered envelope", () => {
    const envelope = sealCredential(ring, BINDING, "token");
    const flip = (s: string) => {
      const bytes = Buffer.from(s, "base64");
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
      return bytes.toString("base64");
    };
    expect(() => openCredential(ring, BINDING, { ...envelope, ciphertext: flip(envelope.ciphertext) })).toThrow(
      CredentialKeyError,
    );
    expect(() => openCredential(ring, BINDING, { ...envelope, wrappedKey: flip(envelope.wrappedKey) })).toThrow(
      CredentialKeyError,
    );
    expect(() => openCredential(ring, BINDING, { ...envelope, ciphertext: "" })).toThrow(/too short/);
  });

  it("keeps credentials of any characters", () => {
    const token = "user:pä$$wörd 😀\n";
    expect(openCredential(ring, BINDING, sealCredential(ring, BINDING, token))).toBe(token);
  });
});

describe("rotation", () => {
  const [oldKey, newKey] = [b64(), b64()];
  const before = keyRingFrom(oldKey, "");
  const during = keyRingFrom(newKey, oldKey);
  const after = keyRingFrom(newKey, "");

  it("opens envelopes of a previous key while both are held", () => {
    const envelope = sealCredential(before, BINDING, "token");
    expect(openCredential(during, BINDING, envelope)).toBe("token");
  });

  it("rewraps the data key under the new key, keeping the credential's ciphertext", () => {
    const envelope = sealCredential(before, BINDING, "token");
    const rewrapped = rewrapCredential(during, BINDING, envelope);
    expect(rewrapped.keyId).toBe(during.current.id);
    expect(rewrapped.ciphertext).toBe(envelope.ciphertext);
    expect(rewrapped.wrappedKey).not.toBe(envelope.wrappedKey);
    // Once rewrapped, the old key is no longer needed; before, it was.
    expect(openCredential(after, BINDING, rewrapped)).toBe("token");
    expect(() => openCredential(after, BINDING, envelope)).toThrow(/does not hold/);
  });

  it("leaves an envelope of the current key as it is", () => {
    const envelope = sealCredential(after, BINDING, "token");
    expect(rewrapCredential(after, BINDING, envelope)).toBe(envelope);
  });

  it("refuses to rewrap what it cannot open", () => {
    const envelope = sealCredential(before, BINDING, "token");
    expect(() => rewrapCredential(after, BINDING, envelope)).toThrow(CredentialKeyError);
    expect(() => rewrapCredential(during, "org-1/other", envelope)).toThrow(/does not open/);
  });
});
