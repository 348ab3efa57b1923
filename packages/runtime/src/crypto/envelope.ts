import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Envelope encryption of values kept at rest (docs/security.md#source-provider-credentials,
 * docs/security.md#cluster-secrets). A value is sealed with AES-256-GCM under a data key made for its record alone;
 * the data key is sealed (wrapped) under the key-encryption key from the environment (`CREDENTIALS_ENCRYPTION_KEY`),
 * named by its key id. Both seals carry the record's binding (what the record is, and its ids) as additional data,
 * so a ciphertext copied onto another record, or another kind of record, does not open. Rotating the key rewraps
 * each data key under the new key; the value's own ciphertext never changes.
 */

/** A key-encryption key: 32 bytes and its id. */
export interface KeyEncryptionKey {
  id: string;
  key: Buffer;
}

/** The keys a process holds: the current one (new envelopes, rewrapping) and previous ones (opening only). */
export interface KeyRing {
  current: KeyEncryptionKey;
  previous: readonly KeyEncryptionKey[];
}

/** A sealed value as stored. Every part is base64 except the key id. */
export interface SealedEnvelope {
  /** The id of the key-encryption key that wrapped the data key. */
  keyId: string;
  /** The data key sealed under that key: 12-byte IV, ciphertext, 16-byte tag. */
  wrappedKey: string;
  /** The value sealed under the data key: 12-byte IV, ciphertext, 16-byte tag. */
  ciphertext: string;
}

/** What a kind of record calls its two seals in their additional data (for example `source-provider`, `credential`). */
export interface EnvelopeKind {
  /** The kind of record: `conveyor:<record>:data-key:<binding>` binds the wrapped data key. */
  record: string;
  /** What the value is: `conveyor:<record>:<value>:<binding>` binds the sealed value. */
  value: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** A key's id: `k` and the first 16 hex digits of its SHA-256, so operators never choose (or collide) ids. */
export function keyIdOf(key: Buffer): string {
  return `k${createHash("sha256").update(key).digest("hex").slice(0, 16)}`;
}

/** Reads a base64 key of exactly 32 bytes; throws naming `name` otherwise. */
export function parseKey(name: string, base64: string): KeyEncryptionKey {
  const text = base64.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) throw new Error(`${name} is not base64`);
  const key = Buffer.from(text, "base64");
  if (key.length !== KEY_BYTES) throw new Error(`${name} must be ${KEY_BYTES} bytes (base64), not ${key.length}`);
  return { id: keyIdOf(key), key };
}

/** The key ring of `CREDENTIALS_ENCRYPTION_KEY` and the comma-separated `CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS`. */
export function keyRingFrom(current: string, previous: string): KeyRing {
  const now = parseKey("CREDENTIALS_ENCRYPTION_KEY", current);
  const old = previous
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")
    .map((p, i) => parseKey(`CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS (key ${i + 1})`, p))
    .filter((k) => k.id !== now.id);
  return { current: now, previous: old };
}

/** The error an envelope that cannot be opened gives: the key is not held, or the envelope is not intact. */
export class EnvelopeKeyError extends Error {
  override name = "EnvelopeKeyError";
}

function seal(key: Buffer, plain: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64");
}

function open(key: Buffer, sealed: string, aad: string, what: string): Buffer {
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new EnvelopeKeyError(`the ${what} is too short to be sealed`);
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new EnvelopeKeyError(`the ${what} does not open: it was altered, or sealed for another record or key`);
  }
}

const wrapAad = (kind: EnvelopeKind, binding: string) => `conveyor:${kind.record}:data-key:${binding}`;
const valueAad = (kind: EnvelopeKind, binding: string) => `conveyor:${kind.record}:${kind.value}:${binding}`;

/** Seals `value` for the record of `kind` named by `binding` under the ring's current key. */
export function sealValue(ring: KeyRing, kind: EnvelopeKind, binding: string, value: string): SealedEnvelope {
  const dataKey = randomBytes(KEY_BYTES);
  try {
    return {
      keyId: ring.current.id,
      wrappedKey: seal(ring.current.key, dataKey, wrapAad(kind, binding)),
      ciphertext: seal(dataKey, Buffer.from(value, "utf8"), valueAad(kind, binding)),
    };
  } finally {
    dataKey.fill(0);
  }
}

function keyFor(ring: KeyRing, keyId: string, kind: EnvelopeKind): KeyEncryptionKey {
  const key = [ring.current, ...ring.previous].find((k) => k.id === keyId);
  if (!key) {
    throw new EnvelopeKeyError(
      `the ${kind.value} was sealed with key ${keyId}, which this process does not hold (CREDENTIALS_ENCRYPTION_KEY or CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS)`,
    );
  }
  return key;
}

/** Opens an envelope of the record of `kind` named by `binding`; throws EnvelopeKeyError when it cannot. */
export function openValue(ring: KeyRing, kind: EnvelopeKind, binding: string, envelope: SealedEnvelope): string {
  const wrapped = keyFor(ring, envelope.keyId, kind).key;
  const dataKey = open(wrapped, envelope.wrappedKey, wrapAad(kind, binding), "data key");
  try {
    if (dataKey.length !== KEY_BYTES) throw new EnvelopeKeyError("the data key has the wrong length");
    return open(dataKey, envelope.ciphertext, valueAad(kind, binding), kind.value).toString("utf8");
  } finally {
    dataKey.fill(0);
  }
}

/**
 * The envelope with its data key wrapped under the ring's current key (the same envelope when it already is);
 * throws EnvelopeKeyError when its key is not held or it does not open.
 */
export function rewrapValue(
  ring: KeyRing,
  kind: EnvelopeKind,
  binding: string,
  envelope: SealedEnvelope,
): SealedEnvelope {
  if (envelope.keyId === ring.current.id) return envelope;
  const wrapped = keyFor(ring, envelope.keyId, kind).key;
  const dataKey = open(wrapped, envelope.wrappedKey, wrapAad(kind, binding), "data key");
  try {
    return {
      keyId: ring.current.id,
      wrappedKey: seal(ring.current.key, dataKey, wrapAad(kind, binding)),
      ciphertext: envelope.ciphertext,
    };
  } finally {
    dataKey.fill(0);
  }
}
