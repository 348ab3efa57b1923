import formBody from "@fastify/formbody";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { PipelineAccessChecks } from "../auth/pipeline-access.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { HttpError } from "../errors/http-error.js";
import type { Urls } from "../render/urls.js";
import { registerAssets } from "./assets/assets.js";
import { isApiPath, registerErrorPages } from "./error-pages.js";
import { html } from "./html.js";
import { dashboardPage } from "./pages/dashboard-page.js";
import { signInPath } from "./paths.js";
import { registerSecurityHeaders } from "./security-headers.js";
import type { WebDeps } from "./web-deps.js";

/** What the gateway hands the pages (app/build-app.ts). */
export interface WebOptions {
  clients: GatewayClients;
  urls: Urls;
  pipelineAccess: PipelineAccessChecks;
}

/**
 * Until the session plugin (web/session/, W1) lands, nobody is signed in: every page that needs a person answers
 * the sign-in redirect, and every state-changing request is refused, so no action can run unprotected.
 */
const pendingSessions: Pick<WebDeps, "requireSignIn" | "requireCsrf" | "csrfField"> = {
  async requireSignIn(request: FastifyRequest, reply: FastifyReply) {
    if (request.principal) return;
    return reply.redirect(signInPath(request.url), 302);
  },
  async requireCsrf() {
    throw new HttpError(403, "Forbidden");
  },
  csrfField: () => html``,
};

/**
 * Hands a request for an API's path that only matched a page's pattern (`GET /v2` looks like `/{org}`) to the app's
 * not-found handler, so the APIs' unknown URLs keep their JSON 404. It runs before any other hook of the scope.
 */
async function apiPathsAreNotPages(request: FastifyRequest, reply: FastifyReply) {
  if (!isApiPath(request.url)) return;
  reply.callNotFound();
  return reply;
}

/**
 * The pages for people (docs/pages.md), as one encapsulated plugin: sign-in and sessions, the pages and their
 * actions, live updates, static assets and status badges. It reuses the gateway's service clients, pipeline access
 * policy and URL helpers: no extra hop, one process to deploy. Every answer carries the security headers
 * (security-headers.ts) and every error is a styled page (error-pages.ts). Assets and badges are public and read no
 * session; everything else is in an inner scope where the session decides who the person is.
 */
export async function registerWeb(app: FastifyInstance, opts: WebOptions): Promise<void> {
  await app.register(async (web) => {
    web.addHook("onRequest", apiPathsAreNotPages);
    registerSecurityHeaders(web);
    registerErrorPages(web);
    // Forms post application/x-www-form-urlencoded (within the app's body limit); only here: the APIs take JSON alone.
    await web.register(formBody);
    // The REST API decorates its own scope (auth/authenticate.ts); pages get the person from the session instead.
    web.decorateRequest("principal", null);
    registerAssets(web);

    await web.register(async (pages) => {
      // W1: registerSessions(pages, ...) sets request.principal from the session cookie, serves /login and /logout,
      // and provides requireSignIn, requireCsrf and csrfField, which replace pendingSessions here.
      const deps: WebDeps = { ...opts, ...pendingSessions };
      dashboardPage(pages, deps);
    });
  });
}
