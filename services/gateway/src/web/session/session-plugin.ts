/**
 * Sessions of the pages (docs/pages.md#signing-in): registerSessions, called by the web plugin (web/web-plugin.ts)
 * inside the pages' scope, reads the session cookie on every request, resolves it through the gateway's session
 * cache to the person's Principal (the same type the REST API's tokens resolve to, so organizationAccess,
 * pipelineAccess and callerOf work unchanged), serves the sign-in routes, and gives the pages the hooks that need a
 * person and refuse forged requests. The REST and agent APIs never read this cookie: they stay token-only.
 */

import type { Client } from "@connectrpc/connect";
import type { IdentityService } from "@conveyor/proto/identity";
import cookie from "@fastify/cookie";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { PrincipalCache } from "../../auth/principal-cache.js";
import type { SafeHtml } from "../html.js";
import { signInPath } from "../paths.js";
import { createRequireCsrf, csrfField, rememberSessionSecret } from "./csrf.js";
import { clearSessionCookie, SESSION_COOKIE } from "./session-cookie.js";
import { registerSignInRoutes } from "./sign-in-routes.js";

/** What the session plugin needs from the gateway. */
export interface SessionDeps {
  identity: Pick<Client<typeof IdentityService>, "signInWithPassword" | "signInWithLink" | "endSession">;
  /** The gateway's session cache (auth/session-cache.ts), which identity's events keep current. */
  sessions: PrincipalCache;
  /** The site's address (WEB_URL): https there makes the cookies Secure, and its origin may post forms. */
  webUrl: string;
}

/** What the pages get from the session plugin (web/web-deps.ts). */
export interface SessionHooks {
  /** Sends a signed-out person to sign in, coming back to the page asked for. */
  requireSignIn(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  /** Refuses a state-changing request that does not carry the session's CSRF token or comes from another site. */
  requireCsrf(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  /** The hidden input with the session's CSRF token, for every form that posts. */
  csrfField(request: FastifyRequest): SafeHtml;
}

/** Session secrets are short; a longer cookie is not one and is not looked up. */
const MAX_SECRET_LENGTH = 128;

/** Registers cookies, the session lookup and the sign-in routes on the pages' scope; returns the pages' hooks. */
export async function registerSessions(scope: FastifyInstance, deps: SessionDeps): Promise<SessionHooks> {
  await scope.register(cookie);
  scope.addHook("onRequest", async (request, reply) => {
    const secret = request.cookies[SESSION_COOKIE];
    if (!secret) return;
    const principal = secret.length <= MAX_SECRET_LENGTH ? await deps.sessions.get(secret) : null;
    if (!principal) {
      // Ended, expired or not a session: the browser forgets it, and the person is signed out.
      clearSessionCookie(request, reply, deps.webUrl);
      return;
    }
    request.principal = principal;
    rememberSessionSecret(request, secret);
  });
  registerSignInRoutes(scope, deps);
  return {
    async requireSignIn(request, reply) {
      if (request.principal) return;
      // A page comes back after signing in; a refused POST cannot be repeated, so it goes to the sign-in page alone.
      if (request.method === "GET" || request.method === "HEAD") {
        return reply.redirect(signInPath(request.url), 302);
      }
      return reply.redirect("/login", 303);
    },
    requireCsrf: createRequireCsrf(deps.webUrl),
    csrfField,
  };
}
