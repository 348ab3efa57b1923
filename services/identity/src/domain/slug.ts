/** Longest slug the service accepts. */
export const MAX_SLUG_LENGTH = 100;

const SLUG_RE = /^[a-z0-9][a-z0-9-]*$/;

/**
 * Derives a URL slug from a display name: lower case, every run of characters other than letters and digits
 * becomes one hyphen, and hyphens are trimmed from both ends. "My  Great Org!" → "my-great-org".
 */
export function deriveSlug(name: string): string {
  return name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_SLUG_LENGTH)
    .replace(/-+$/, "");
}

/** Why a slug is unacceptable, or undefined when it is fine. */
export function slugProblem(slug: string): string | undefined {
  if (slug === "") return "can't be blank";
  if (slug.length > MAX_SLUG_LENGTH) return `is too long (maximum is ${MAX_SLUG_LENGTH} characters)`;
  if (!SLUG_RE.test(slug))
    return "must start with a letter or digit and contain only lower-case letters, digits and hyphens";
  return undefined;
}
