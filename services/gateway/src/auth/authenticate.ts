import type { OrganizationAccess, Principal } from "@conveyor/proto/identity";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors/http-error.js";
import type { PrincipalCache } from "./principal-cache.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The caller, set on every REST (/v2) route before its handler runs (null elsewhere). */
    principal: Principal | null;
  }
}

/** Buildkite's answer to a missing, unknown or revoked token. */
export const AUTHENTICATION_REQUIRED =
  "Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication";

/** The token secret of an `Authorization: Bearer <token>` header, or undefined. Other schemes are not accepted. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * Registers, on the REST API's scope (rest/rest-api.ts), the checks every route in it shares: the route must declare
 * its scope (`config.scope`; checked when routes are added, so that none is open by omission), the caller must
 * present a valid bearer token (401), and the token must carry the route's scope (403).
 */
export function registerAuthentication(scope: FastifyInstance, cache: PrincipalCache): void {
  scope.decorateRequest("principal", null);
  scope.addHook("onRoute", (route) => {
    if (route.config?.scope === undefined) {
      throw new Error(`route ${[route.method].flat().join(",")} ${route.url} declares no scope`);
    }
  });
  scope.addHook("onRequest", async (request) => {
    const { scope } = request.routeOptions.config;
    // Unreachable while onRoute checks every route; a route without a scope is refused rather than open.
    if (scope === undefined) throw new HttpError(404, "Not Found");
    const secret = bearerToken(request.headers.authorization);
    if (!secret) throw new HttpError(401, AUTHENTICATION_REQUIRED);
    const principal = await cache.get(secret);
    if (!principal) throw new HttpError(401, AUTHENTICATION_REQUIRED);
    if (scope !== null && !principal.token?.scopes.includes(scope)) {
      throw new HttpError(403, `Your access token doesn't have the ${scope} scope`);
    }
    request.principal = principal;
  });
}

/**
 * The caller as the services record who did something (the creator of a build or a pipeline, who retried or
 * unblocked a job, who paused an agent): its user's id, name, email, avatar and creation time; undefined without one.
 */
export function callerOf(request: FastifyRequest) {
  const user = request.principal?.user;
  if (!user) return undefined;
  return { id: user.id, name: user.name, email: user.email, avatarUrl: user.avatarUrl, createdAt: user.createdAt };
}

/** The caller's access to an organization by slug; anything the caller cannot reach is 404, never a hint it exists. */
export function organizationAccess(request: FastifyRequest, slug: string): OrganizationAccess {
  const access = request.principal?.organizations.find((o) => o.organization?.slug === slug);
  if (!access?.organization) throw new HttpError(404, "No organization found");
  return access;
}
