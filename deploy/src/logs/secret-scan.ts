import { createReadStream, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

/**
 * Finds secrets in logs. Every secret the services issue is a prefix and 40 hex digits (runtime's newSecret):
 * API access tokens `bkua_`, agent registration tokens `bkat_`, agent access tokens `bkaa_`, job tokens `bkaj_`,
 * registry tokens `bkpt_`, the pages' session secrets `cvs_` and one-time sign-in links `cvl_`. Jobs' OIDC tokens are
 * found as any signed JWT (header, payload and signature), and signing keys as any private JSON Web Key (its `d`);
 * other secrets (the S3 secret key) are looked for by value. Cluster secrets' values are a user's and have no shape:
 * the end-to-end suites give the values they set one, `cvsv_` and 40 hex digits, so that a value leaked into any log
 * is found as well. A finding names the file, the line and a redacted form of the secret, never the secret itself.
 */
export const ISSUED_SECRET = /\b(?:bk(?:ua|at|aa|aj|pt)|cv[sl]|cvsv)_[0-9a-f]{40}\b/g;

/**
 * A JWT with its payload (a job's OIDC token): three base64url parts, the first two JSON objects (`eyJ`). A signed
 * pipeline step's signature has an empty (detached) payload and is not a secret: it does not match.
 */
export const SIGNED_JWT = /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g;

/** The private part of a JSON Web Key (`"d":"…"`, an RSA, EC or OKP private key), escaped in a string or not. */
export const PRIVATE_JWK = /\\?"d\\?"\s*:\s*\\?"[A-Za-z0-9_-]{32,}/g;

export interface SecretFinding {
  file: string;
  line: number;
  /** The secret's first characters and its length, e.g. `bkua_3f…(45)`. */
  redacted: string;
}

/** A secret shown safely: its first characters and its length. */
export function redact(secret: string): string {
  return `${secret.slice(0, 7)}…(${secret.length})`;
}

/** The secrets in one line of text: issued ones by their shape, known ones (at least 8 characters) by value. */
export function secretsInLine(text: string, known: readonly string[]): string[] {
  const found = [ISSUED_SECRET, SIGNED_JWT, PRIVATE_JWK].flatMap((shape) => [...text.matchAll(shape)].map((m) => m[0]));
  for (const secret of known) if (secret.length >= 8 && text.includes(secret)) found.push(secret);
  return found;
}

export interface ScanResult {
  files: number;
  bytes: number;
  findings: SecretFinding[];
}

/** Scans every file under `dir` (recursively) that `include` accepts (default: every `*.log`), line by line. */
export async function scanForSecrets(
  dir: string,
  known: readonly string[],
  include: (path: string) => boolean = (path) => path.endsWith(".log"),
): Promise<ScanResult> {
  const result: ScanResult = { files: 0, bytes: 0, findings: [] };
  for (const file of filesUnder(dir).filter(include)) {
    result.files++;
    result.bytes += statSync(file).size;
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
    let line = 0;
    for await (const text of lines) {
      line++;
      for (const secret of secretsInLine(text, known)) result.findings.push({ file, line, redacted: redact(secret) });
    }
  }
  return result;
}

/** Every file under `dir`, recursively (the stack's logs, for the scans of a test run). */
export function filesUnder(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(path));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}
