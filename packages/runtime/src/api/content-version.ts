import { createHash } from "node:crypto";

/**
 * A short, collision-resistant name for some content (128 bits of SHA-256, base64url): equal parts, equal names,
 * in every process. Each part is ended by a NUL, so ["a,b"] and ["a", "b"] differ. For answers named by their content
 * (ETags, the builds service's read versions).
 */
export function contentVersion(...parts: (Uint8Array | string)[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\0");
  return hash.digest("base64url").slice(0, 22);
}
