import formBody from "@fastify/formbody";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { PipelineAccessChecks } from "../auth/pipeline-access.js";
import type { PrincipalCache } from "../auth/principal-cache.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import type { Urls } from "../render/urls.js";
import { agentActions } from "./actions/agent-actions.js";
import { buildActionRoutes } from "./actions/build-actions.js";
import { createBuildAction } from "./actions/create-build-action.js";
import { jobActionRoutes } from "./actions/job-actions.js";
import { registerAssets } from "./assets/assets.js";
import { registerBadges } from "./badge/badge-route.js";
import { isApiPath, registerErrorPages } from "./error-pages.js";
import type { LiveHub } from "./live/live-hub.js";
import { registerLiveRoute } from "./live/live-route.js";
import { agentPage } from "./pages/agent-page.js";
import { agentsPage } from "./pages/agents-page.js";
import { buildArtifactRoutes } from "./pages/build-artifacts.js";
import { createJobRowCache } from "./pages/build-jobs.js";
import { buildPageRoutes } from "./pages/build-page.js";
import { createBuildReader } from "./pages/build-reader.js";
import { currentJobRedirect } from "./pages/current-job-redirect.js";
import { dashboardPage } from "./pages/dashboard-page.js";
import { jobLogRoutes } from "./pages/job-log-page.js";
import { organizationPage } from "./pages/organization-page.js";
import { pipelinePage } from "./pages/pipeline-page.js";
import { registerSecurityHeaders } from "./security-headers.js";
import { registerSessions } from "./session/session-plugin.js";
import type { WebDeps } from "./web-deps.js";

/** What the gateway hands the pages (app/build-app.ts). */
export interface WebOptions {
  clients: GatewayClients;
  urls: Urls;
  pipelineAccess: PipelineAccessChecks;
  /** The gateway's session cache (auth/session-cache.ts), which identity's events keep current. */
  sessions: PrincipalCache;
  /** The site's address (WEB_URL): decides Secure cookies and the origin forms may come from. */
  webUrl: string;
  /** The base artifact downloads are signed for (the object store, or the gateway's /objects proxy). */
  artifactUrlBase: string;
  /** The live build pages' NATS feeds and stream counts (main.ts); without it, build pages do not update live. */
  live?: LiveHub;
  /** Tells of every pipeline change (the gateway's pipeline cache); without it, pages keep no pipeline lists. */
  pipelineChanges?: (listener: () => void) => void;
}

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
    registerBadges(web, opts.clients);

    await web.register(async (pages) => {
      // Sets request.principal from the session cookie, serves /login and /logout, and gives the pages
      // requireSignIn, requireCsrf and csrfField (web/session/session-plugin.ts).
      const hooks = await registerSessions(pages, {
        identity: opts.clients.identity,
        sessions: opts.sessions,
        webUrl: opts.webUrl,
      });
      const deps: WebDeps = {
        ...opts,
        ...hooks,
        readBuild: createBuildReader(opts.clients),
        jobRows: createJobRowCache(),
      };
      dashboardPage(pages, deps);
      organizationPage(pages, deps);
      pipelinePage(pages, deps);
      createBuildAction(pages, deps);
      agentsPage(pages, deps);
      agentPage(pages, deps);
      agentActions(pages, deps);
      currentJobRedirect(pages, deps);
      buildPageRoutes(pages, deps);
      jobLogRoutes(pages, deps);
      buildArtifactRoutes(pages, { ...deps, artifactUrlBase: opts.artifactUrlBase });
      buildActionRoutes(pages, deps);
      jobActionRoutes(pages, deps);
      if (opts.live) registerLiveRoute(pages, deps, opts.live);
    });
  });
}
