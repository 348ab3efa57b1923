/**
 * Protection of the pages' state-changing requests against cross-site request forgery (docs/pages.md#signing-in).
 * Every POST must come from our own pages: the browser's Origin and Sec-Fetch-Site headers, when sent, must say so,
 * and the form must carry a token only our pages know. With a session, the token is an HMAC of the session's secret
 * (which lives in an HttpOnly cookie no other site can read), so every gateway computes it without shared state and
 * it dies with the session. The sign-in form, before any session, uses a random token that is also in a cookie
 * (double submit).
 */

import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "../../errors/http-error.js";
import { html, type SafeHtml } from "../html.js";
import { LOGIN_CSRF_COOKIE } from "./session-cookie.js";

/** The form field (and, for scripts, the header) carrying the token. */
export const CSRF_FIELD = "_csrf";
export const CSRF_HEADER = "x-csrf-token";

/** What a refused request is told (a 403 page). */
export const CSRF_REFUSED =
  "This form has expired or did not come from this site. Go back, reload the page and try again.";

/** The session secret of each signed-in request (set by the session plugin); never rendered. */
const sessionSecrets = new WeakMap<FastifyRequest, string>();

/** Records the session secret a request was signed in with, for its CSRF token. */
export function rememberSessionSecret(request: FastifyRequest, secret: string): void {
  sessionSecrets.set(request, secret);
}

/** The session secret a request was signed in with, if any. */
export function sessionSecretOf(request: FastifyRequest): string | undefined {
  return sessionSecrets.get(request);
}

/** The session's CSRF token: an HMAC of its secret, so that the secret cannot be recovered from a page. */
export function sessionCsrfToken(secret: string): string {
  return createHmac("sha256", secret).update("conveyor csrf v1").digest("base64url");
}

/** A new random token for the sign-in form. */
export function newLoginCsrfToken(): string {
  return randomBytes(24).toString("base64url");
}

/**
 * The hidden input every form that posts includes: the session's token, or nothing when signed out (such a post
 * is refused anyway).
 */
export function csrfField(request: FastifyRequest): SafeHtml {
  const secret = sessionSecretOf(request);
  if (!secret) return html``;
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${sessionCsrfToken(secret)}">`;
}

/** Compares two tokens in constant time (their digests, so that lengths need not match). */
function sameToken(given: string, expected: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The token a request carries, in its form body or header. */
function tokenOf(request: FastifyRequest): string | undefined {
  const body = request.body;
  const field = body && typeof body === "object" ? (body as Record<string, unknown>)[CSRF_FIELD] : undefined;
  if (typeof field === "string" && field !== "") return field;
  const header = request.headers[CSRF_HEADER];
  return typeof header === "string" && header !== "" ? header : undefined;
}

/**
 * Whether the browser says the request came from another site: an Origin that is neither the site's address
 * (WEB_URL) nor the request's own, or a Sec-Fetch-Site other than same-origin. A client that sends neither header
 * (not a browser) is left to the token.
 */
export function fromAnotherSite(request: FastifyRequest, webUrl: string): boolean {
  const fetchSite = request.headers["sec-fetch-site"];
  if (fetchSite !== undefined && fetchSite !== "same-origin") return true;
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  return origin !== new URL(webUrl).origin && origin !== `${request.protocol}://${request.host}`;
}

/** The preHandler every state-changing request of a signed-in person runs: 403 without the session's token. */
export function createRequireCsrf(webUrl: string) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const secret = sessionSecretOf(request);
    const given = tokenOf(request);
    if (fromAnotherSite(request, webUrl) || !secret || !given || !sameToken(given, sessionCsrfToken(secret))) {
      throw new HttpError(403, CSRF_REFUSED);
    }
  };
}

/** The sign-in form's check: 403 unless the token matches its cookie's. */
export function createRequireLoginCsrf(webUrl: string) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const expected = request.cookies[LOGIN_CSRF_COOKIE];
    const given = tokenOf(request);
    if (fromAnotherSite(request, webUrl) || !expected || !given || !sameToken(given, expected)) {
      throw new HttpError(403, CSRF_REFUSED);
    }
  };
}
