import type { FastifyReply, FastifyRequest } from "fastify";

/** The cookie holding a person's session secret (docs/pages.md#signing-in). */
export const SESSION_COOKIE = "conveyor_session";

/** The cookie of the sign-in form's CSRF token, before there is a session (a double-submit token). */
export const LOGIN_CSRF_COOKIE = "conveyor_login_csrf";

/**
 * Whether cookies must be Secure: the request came over https, or the site's address (WEB_URL) is https (TLS ends
 * at a proxy in front of the gateway).
 */
export function secureCookies(request: FastifyRequest, webUrl: string): boolean {
  return request.protocol === "https" || webUrl.startsWith("https:");
}

/**
 * The session cookie's attributes: sent to every page (Path=/), never readable by script (HttpOnly), not sent with
 * other sites' requests except top-level navigations (SameSite=Lax), Secure behind https.
 */
function sessionCookieOptions(request: FastifyRequest, webUrl: string) {
  return { path: "/", httpOnly: true, sameSite: "lax", secure: secureCookies(request, webUrl) } as const;
}

/** Sets the session cookie, kept by the browser until the session's own maximum end. */
export function setSessionCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  webUrl: string,
  session: { secret: string; expiresAt: Date },
): void {
  const maxAge = Math.max(0, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000));
  reply.setCookie(SESSION_COOKIE, session.secret, { ...sessionCookieOptions(request, webUrl), maxAge });
}

/** Removes the session cookie. */
export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply, webUrl: string): void {
  reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(request, webUrl));
}

/** The sign-in form's token cookie: only sent to /login, for the browser session. */
function loginCsrfOptions(request: FastifyRequest, webUrl: string) {
  return { path: "/login", httpOnly: true, sameSite: "lax", secure: secureCookies(request, webUrl) } as const;
}

/** Sets the sign-in form's token cookie. */
export function setLoginCsrfCookie(request: FastifyRequest, reply: FastifyReply, webUrl: string, token: string): void {
  reply.setCookie(LOGIN_CSRF_COOKIE, token, loginCsrfOptions(request, webUrl));
}

/** Removes the sign-in form's token cookie (signed in: the session's token takes over). */
export function clearLoginCsrfCookie(request: FastifyRequest, reply: FastifyReply, webUrl: string): void {
  reply.clearCookie(LOGIN_CSRF_COOKIE, loginCsrfOptions(request, webUrl));
}
