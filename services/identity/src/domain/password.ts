/**
 * Passwords of people who sign in on the pages (docs/pages.md#signing-in): the rule a new password must meet, and
 * its storage as a salted scrypt hash whose parameters travel in the stored string, so that a later change of cost
 * still verifies the hashes made before it. The work is CPU only; nothing here is logged or returned to a caller.
 */

import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/** scrypt's cost parameters: N (CPU and memory, a power of two), r (block size) and p (parallelism). */
export interface ScryptCost {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/** The cost of new hashes: 2^15 × 128 × 8 bytes = 32 MiB of memory and about 0.1 s of one core per hash. */
export const PASSWORD_COST: ScryptCost = Object.freeze({ N: 2 ** 15, r: 8, p: 1 });

/** The shortest and longest password accepted, in characters. */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;

const SALT_BYTES = 16;
const KEY_BYTES = 32;
const SCHEME = "scrypt";

/** Why a new password is refused (the rule, in words), or undefined when it is acceptable. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `is too short: use at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `is too long: use at most ${PASSWORD_MAX_LENGTH} characters`;
  if (new Set(password).size === 1) return "must not be one character repeated";
  return undefined;
}

/** The stored form of a password: `scrypt$N$r$p$<salt base64>$<hash base64>`, with a new random salt. */
export async function hashPassword(password: string, cost: ScryptCost = PASSWORD_COST): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, cost);
  return [SCHEME, cost.N, cost.r, cost.p, salt.toString("base64"), key.toString("base64")].join("$");
}

/**
 * Whether a password matches a stored hash, compared in constant time. A stored string this code did not make is
 * an error (a damaged record), not a mismatch.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const { cost, salt, key } = parseStored(stored);
  const candidate = await derive(password, salt, cost);
  return candidate.length === key.length && timingSafeEqual(candidate, key);
}

const dummies = new Map<string, Promise<string>>();

/**
 * A hash of no one's password at the given cost, made once per process: verifying against it when there is no
 * stored hash (an unknown email, a user without a password) costs what a real verification costs, so that the time
 * of an answer does not tell whether an account exists.
 */
export function dummyHash(cost: ScryptCost = PASSWORD_COST): Promise<string> {
  const key = `${cost.N}:${cost.r}:${cost.p}`;
  let hash = dummies.get(key);
  if (!hash) {
    hash = hashPassword(randomBytes(18).toString("base64"), cost);
    dummies.set(key, hash);
  }
  return hash;
}

/** The cost a stored hash was made with. */
export function costOf(stored: string): ScryptCost {
  return parseStored(stored).cost;
}

function parseStored(stored: string): { cost: ScryptCost; salt: Buffer; key: Buffer } {
  const parts = stored.split("$");
  const [scheme, n, r, p, salt, key] = parts;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  if (parts.length !== 6 || scheme !== SCHEME || !validCost(cost) || !salt || !key) {
    throw new Error("a stored password hash is not in the scrypt$N$r$p$salt$hash form");
  }
  return { cost, salt: Buffer.from(salt, "base64"), key: Buffer.from(key, "base64") };
}

/** Bounds on parameters read back from storage, so that a damaged record cannot ask for gigabytes. */
function validCost(c: ScryptCost): boolean {
  const powerOfTwo = Number.isInteger(c.N) && c.N > 1 && (c.N & (c.N - 1)) === 0;
  return powerOfTwo && c.N <= 2 ** 20 && Number.isInteger(c.r) && c.r >= 1 && c.r <= 32 && c.p >= 1 && c.p <= 16;
}

function derive(password: string, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  // The same password typed on systems that compose accents differently is the same password.
  const normalized = password.normalize("NFC");
  // scrypt needs 128 × N × r bytes; maxmem (32 MiB by default) must allow it, with room to spare.
  const maxmem = 2 * 128 * cost.N * cost.r + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(normalized, salt, KEY_BYTES, { ...cost, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}
