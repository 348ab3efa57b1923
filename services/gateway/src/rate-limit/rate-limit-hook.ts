import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { type RateLimiter, rateLimitBody, rateLimitHeaders } from "./rate-limiter.js";

/** The headers a browser client may read across origins (see the CORS registration in app/build-app.ts). */
export const RATE_LIMIT_HEADER_NAMES = [
  "RateLimit-Scope",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "RateLimit-Warning",
];

/**
 * What an authenticated REST request counts against. A request naming an organization the caller belongs to
 * (`/v2/organizations/{org}/…`, `/v2/packages/organizations/{org}/…`) counts against that organization, by id, as in
 * Buildkite. Everything else the caller asks (`/v2/user`, `/v2/access-token`, `/v2/organizations`, the
 * cross-organization `/v2/builds`, and any organization the caller cannot reach, which answers 404) counts against the
 * caller's own user, in a bucket of the same size: no single organization is the obvious one to charge, and a
 * stranger must not be able to spend an organization's budget. Unauthenticated requests and public routes are not
 * counted.
 */
export function rateLimitKey(request: FastifyRequest): string | undefined {
  const principal = request.principal;
  if (!principal) return undefined;
  const slug = (request.params as Record<string, unknown> | undefined)?.org;
  if (typeof slug === "string") {
    const organization = principal.organizations.find((o) => o.organization?.slug === slug)?.organization;
    if (organization) return `org:${organization.id}`;
  }
  const userId = principal.user?.id ?? principal.token?.userId;
  return userId ? `user:${userId}` : undefined;
}

/**
 * Counts every authenticated request of the REST API's scope (rest/rest-api.ts), sets the `RateLimit-*` headers on
 * its answer, and refuses it with Buildkite's 429 once its organization (see rateLimitKey) is over the limit for the
 * current minute. Registered after authentication, whose onRequest hook sets the principal. The agent API (/v3) is
 * not limited: it is registered outside that scope.
 */
export function registerRateLimit(scope: FastifyInstance, limiter: RateLimiter): void {
  scope.addHook("onRequest", async (request, reply) => {
    const key = rateLimitKey(request);
    if (key === undefined) return;
    const decision = limiter.hit(key);
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) {
      const body = rateLimitBody(decision);
      throw new HttpError(429, body.message, body);
    }
  });
}
