/**
 * The sign-in routes (docs/pages.md#signing-in): GET and POST /login (email and password), GET /login/link/:secret
 * (a one-time link: a page whose button POSTs to the same address, which signs in) and POST /logout. Every answer that shows or sets a secret is never cached.
 */

import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import type { IdentityService, Session } from "@conveyor/proto/identity";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { PrincipalCache } from "../../auth/principal-cache.js";
import { createRequireCsrf, createRequireLoginCsrf, newLoginCsrfToken, sessionSecretOf } from "./csrf.js";
import { nextPath } from "./next-path.js";
import {
  clearLoginCsrfCookie,
  clearSessionCookie,
  LOGIN_CSRF_COOKIE,
  setLoginCsrfCookie,
  setSessionCookie,
} from "./session-cookie.js";
import { renderSignInPage, renderUnusableLinkPage, renderUseLinkPage } from "./sign-in-pages.js";

/** What the sign-in routes use. */
export interface SignInRouteDeps {
  identity: Pick<Client<typeof IdentityService>, "signInWithPassword" | "signInWithLink" | "endSession">;
  sessions: PrincipalCache;
  webUrl: string;
}

interface SignInBody {
  email?: unknown;
  password?: unknown;
  next?: unknown;
}

const text = (value: unknown) => (typeof value === "string" ? value : "");

/** Registers the sign-in routes on the pages' scope. */
export function registerSignInRoutes(scope: FastifyInstance, deps: SignInRouteDeps): void {
  const { identity, webUrl } = deps;
  const requireCsrf = createRequireCsrf(webUrl);
  const requireLoginCsrf = createRequireLoginCsrf(webUrl);

  const page = (reply: FastifyReply, status: number, body: string) =>
    reply.status(status).header("cache-control", "no-store").type("text/html; charset=utf-8").send(body);

  /** Signs the browser in: ends the session it had (if any), sets the new one's cookie, and goes to `next`. */
  async function signedIn(request: FastifyRequest, reply: FastifyReply, res: { session?: Session; secret: string }) {
    const previous = sessionSecretOf(request);
    if (previous) await identity.endSession({ secret: previous });
    const expiresAt = res.session?.expiresAt ? timestampDate(res.session.expiresAt) : new Date();
    setSessionCookie(request, reply, webUrl, { secret: res.secret, expiresAt });
    if (request.cookies[LOGIN_CSRF_COOKIE]) clearLoginCsrfCookie(request, reply, webUrl);
    const next = nextPath((request.query as { next?: unknown }).next ?? (request.body as SignInBody | undefined)?.next);
    return reply.header("cache-control", "no-store").redirect(next, 303);
  }

  /** The sign-in form, with a token cookie made for it unless the browser has one. */
  function signInForm(request: FastifyRequest, reply: FastifyReply, status: number, email: string, problem?: string) {
    let csrfToken = request.cookies[LOGIN_CSRF_COOKIE];
    if (!csrfToken) {
      csrfToken = newLoginCsrfToken();
      setLoginCsrfCookie(request, reply, webUrl, csrfToken);
    }
    const next = nextPath((request.query as { next?: unknown }).next ?? (request.body as SignInBody | undefined)?.next);
    return page(reply, status, renderSignInPage(request, { email, next, csrfToken, ...(problem ? { problem } : {}) }));
  }

  scope.get("/login", async (request, reply) => {
    if (request.principal) return reply.redirect(nextPath((request.query as { next?: unknown }).next), 302);
    return signInForm(request, reply, 200, "");
  });

  scope.post("/login", { preHandler: requireLoginCsrf }, async (request, reply) => {
    const body = (request.body ?? {}) as SignInBody;
    const email = text(body.email);
    try {
      const res = await identity.signInWithPassword({
        email,
        password: text(body.password),
        clientAddress: request.ip,
      });
      return await signedIn(request, reply, res);
    } catch (err) {
      // Wrong credentials and too many failures are answered on the form; anything else is the error page's.
      if (!(err instanceof ConnectError)) throw err;
      if (err.code === Code.Unauthenticated) return signInForm(request, reply, 401, email, err.rawMessage);
      if (err.code === Code.ResourceExhausted) return signInForm(request, reply, 429, email, err.rawMessage);
      throw err;
    }
  });

  // Opening a link shows a button; only the button's POST uses the link (see renderUseLinkPage).
  scope.get<{ Params: { secret: string } }>("/login/link/:secret", async (request, reply) => {
    // The address holds a secret: it may go to this site only (the button's POST), never to another as a referrer.
    // ("no-referrer" would also make the browser send `Origin: null` with the POST, which the CSRF check refuses.)
    reply.header("referrer-policy", "same-origin");
    let csrfToken = request.cookies[LOGIN_CSRF_COOKIE];
    if (!csrfToken) {
      csrfToken = newLoginCsrfToken();
      setLoginCsrfCookie(request, reply, webUrl, csrfToken);
    }
    return page(reply, 200, renderUseLinkPage(request, { secret: request.params.secret, csrfToken }));
  });

  scope.post<{ Params: { secret: string } }>(
    "/login/link/:secret",
    { preHandler: requireLoginCsrf },
    async (request, reply) => {
      reply.header("referrer-policy", "no-referrer");
      try {
        const res = await identity.signInWithLink({ secret: request.params.secret, clientAddress: request.ip });
        return await signedIn(request, reply, res);
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.Unauthenticated) {
          return page(reply, 410, renderUnusableLinkPage(request));
        }
        throw err;
      }
    },
  );

  scope.post("/logout", async (request, reply) => {
    const secret = sessionSecretOf(request);
    if (secret) {
      await requireCsrf(request, reply);
      await identity.endSession({ secret });
      // Identity announces the end to every gateway; this one forgets it now, before the next request.
      const tokenId = request.principal?.token?.id;
      if (tokenId) deps.sessions.evictToken(tokenId);
    }
    clearSessionCookie(request, reply, webUrl);
    return reply.header("cache-control", "no-store").redirect("/login", 303);
  });
}
