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

/**
 * Slugs no organization may take: the first path segment of every address the gateway serves outside an
 * organization's pages, because an organization's page is `/{slug}` (docs/pages.md#pages) and a route of the gateway
 * would otherwise shadow it (its web_url would open the sign-in page, an asset or an API). Kept sorted; a gateway
 * route with a new first segment adds it here (test/web/reserved-slugs.e2e.test.ts checks every one).
 */
export const RESERVED_ORGANIZATION_SLUGS: ReadonlySet<string> = new Set([
  "api",
  "assets",
  "badges",
  "dashboard",
  "healthz",
  "login",
  "logout",
  "objects",
  "organizations",
  "sessions",
  "v1",
  "v2",
  "v3",
  "webhooks",
]);

/** Why a slug is unacceptable for an organization (slugProblem's reasons, or reserved), or undefined. */
export function organizationSlugProblem(slug: string): string | undefined {
  const problem = slugProblem(slug);
  if (problem) return problem;
  if (RESERVED_ORGANIZATION_SLUGS.has(slug)) return "is reserved";
  return undefined;
}
