import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyRequest {
    /** The Content-Security-Policy nonce of this page answer: every script tag the page writes carries it. */
    cspNonce: string;
  }
}

/** A fresh nonce for one answer's Content-Security-Policy (128 random bits). */
export function newNonce(): string {
  return randomBytes(16).toString("base64");
}

/**
 * The headers every web answer carries (docs/pages.md#security-headers). Scripts run only from our own origin or
 * with this answer's nonce, nothing loads from another origin, no page can be framed, and forms post only to us.
 * `style-src-attr 'unsafe-inline'` is there because ansi_up writes 256 and 24-bit log colours as style attributes;
 * style attributes cannot run script.
 */
export function securityHeaders(nonce: string): Record<string, string> {
  return {
    "content-security-policy": [
      "default-src 'none'",
      `script-src 'self' 'nonce-${nonce}'`,
      "style-src 'self'",
      "style-src-attr 'unsafe-inline'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "form-action 'self'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
  };
}

/** Gives every request of the web scope its nonce, and every answer of it the security headers. */
export function registerSecurityHeaders(scope: FastifyInstance): void {
  scope.decorateRequest("cspNonce", "");
  scope.addHook("onRequest", async (request, reply) => {
    request.cspNonce = newNonce();
    reply.headers(securityHeaders(request.cspNonce));
  });
}
