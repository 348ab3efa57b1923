/** Where a person goes after signing in when no page was asked for: their dashboard (web/pages/dashboard-page.ts). */
export const DEFAULT_NEXT = "/dashboard";

const ORIGIN = "http://next.invalid";

/**
 * The page to go to after signing in: `next` when it is a path of this site (not the sign-in pages themselves), else
 * the dashboard. Anything that could leave the site (`//host`, `/\host`, a scheme, control characters a browser
 * strips) is refused rather than repaired, so that a sign-in link cannot send a person elsewhere.
 */
export function nextPath(next: unknown): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is refused.
  if (typeof next !== "string" || !next.startsWith("/") || /[\u0000-\u001f\u007f\\]/.test(next)) return DEFAULT_NEXT;
  let url: URL;
  try {
    url = new URL(next, ORIGIN);
  } catch (err) {
    if (err instanceof TypeError) return DEFAULT_NEXT;
    throw err;
  }
  if (url.origin !== ORIGIN || url.pathname === "/login" || url.pathname.startsWith("/login/")) return DEFAULT_NEXT;
  if (url.pathname === "/logout") return DEFAULT_NEXT;
  return `${url.pathname}${url.search}${url.hash}`;
}
