import type { Logger } from "@conveyor/runtime";
import cors from "@fastify/cors";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import { registerAgentApi } from "../agent-api/agent-api.js";
import { type AgentCredentialCache, createAgentCredentialCache } from "../agent-api/agent-credentials.js";
import type { AgentStreams } from "../agent-stream/agent-streams.js";
import { createAnswerCache } from "../answer-cache/answer-cache.js";
import { createPipelineAccess } from "../auth/pipeline-access.js";
import { createPrincipalCache, identityLookup, type PrincipalCache } from "../auth/principal-cache.js";
import { createSessionCache } from "../auth/session-cache.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import type { GatewayConfig, TrustProxy } from "../config.js";
import { registerErrorHandling } from "../errors/error-handler.js";
import { registerObjectProxy } from "../object-proxy/object-proxy.js";
import { oidcDiscoveryRoutes } from "../oidc/oidc-discovery-routes.js";
import { metaRoutes } from "../public/meta-routes.js";
import { openApiRoutes, registerOpenApi } from "../public/openapi.js";
import { RATE_LIMIT_HEADER_NAMES } from "../rate-limit/rate-limit-hook.js";
import type { RateLimiter } from "../rate-limit/rate-limiter.js";
import { createUrls } from "../render/urls.js";
import { registerRestApi } from "../rest/rest-api.js";
import { type DeclaredRoute, registerRouteDeclarations } from "../route-declarations/declare.js";
import { sendNotFoundPage, wantsPage } from "../web/error-pages.js";
import type { LiveHub } from "../web/live/live-hub.js";
import { registerWeb } from "../web/web-plugin.js";
import { registerWebhooks } from "../webhooks/webhook-route.js";
import { clientLimitOptions, DEFAULT_CLIENT_LIMITS, registerClientLimits } from "./client-limits.js";
import { registerJsonBodies } from "./json-bodies.js";
import { registerRequestIds, requestIdOptions } from "./request-id.js";
import { registerRequestLog } from "./request-log.js";

export interface AppDeps {
  config: Pick<
    GatewayConfig,
    "publicUrl" | "webUrl" | "tokenCacheTtlMs" | "bodyLimitBytes" | "agentCredentialTtlMs" | "agentLogs" | "artifacts"
  > &
    Partial<Pick<GatewayConfig, "clientLimits" | "renderCacheBytes" | "trustProxy" | "oidcIssuer" | "webhookIps">>;
  clients: GatewayClients;
  logger?: Logger;
  /** Counts REST requests per organization (main.ts shares its counts with the other gateways); none: no limit. */
  rateLimiter?: RateLimiter;
  /** The live build pages' hub on this gateway's NATS connection (web/live/); none: no live updates. */
  live?: LiveHub;
  /** Tells of every pipeline change (main.ts: the pipeline cache); none: the pages keep no pipeline lists. */
  pipelineChanges?: (listener: () => void) => void;
  /** The agents' streaming pings this gateway holds (agent-stream/); none: StreamPings answers 404. */
  streams?: AgentStreams;
}

export interface GatewayApp {
  app: FastifyInstance;
  principals: PrincipalCache;
  /** The pages' sessions, cached; main.ts drops ended ones on identity's events, as it does revoked tokens. */
  sessions: PrincipalCache;
  /** Every route the app serves (method and URL pattern), as declared: what the OpenAPI document must cover. */
  routes: readonly DeclaredRoute[];
  /** Agent API credentials, cached; main.ts drops revoked ones on the agents service's events. */
  agentCredentials: AgentCredentialCache;
}

/** request.ip and request.protocol from X-Forwarded-* only for the proxies TRUST_PROXY names. */
function proxyOptions(trust: TrustProxy | undefined): Pick<FastifyServerOptions, "trustProxy"> {
  if (trust === undefined || trust === false) return {};
  return { trustProxy: (Array.isArray(trust) ? [...trust] : trust) as FastifyServerOptions["trustProxy"] };
}

/**
 * Builds the gateway (no listening, no side effects). The app's own scope holds what every request gets (request ids,
 * client limits, CORS, JSON bodies, the error handler, the request log) and the public routes; the REST API (/v2)
 * and the agent API (/v3) are each an encapsulated plugin with their own authentication (rest/rest-api.ts,
 * agent-api/agent-api.ts), the object store proxy a third (object-proxy/object-proxy.ts), and the pages for people
 * a fourth, with sessions instead of tokens (web/web-plugin.ts).
 */
export async function buildApp(deps: AppDeps): Promise<GatewayApp> {
  const clientLimits = deps.config.clientLimits ?? DEFAULT_CLIENT_LIMITS;
  const limits = clientLimitOptions(clientLimits);
  const app: FastifyInstance = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger as FastifyBaseLogger } : { logger: false }),
    bodyLimit: deps.config.bodyLimitBytes,
    ...proxyOptions(deps.config.trustProxy),
    ...requestIdOptions,
    ...limits,
    // Requests are logged by registerRequestLog (one line each, the URL redacted), not by Fastify.
    logController: new LogController({ disableRequestLogging: true }),
    // Bodies are checked strictly (no coercion), and every problem is reported at once.
    ajv: { customOptions: { coerceTypes: false, allErrors: true } },
    routerOptions: { ...limits.routerOptions, ignoreTrailingSlash: false, ignoreDuplicateSlashes: true },
  });
  // The app's own scope: what every request gets, whichever API (or none) it reaches.
  registerRequestIds(app);
  registerClientLimits(app, clientLimits);
  const routes = registerRouteDeclarations(app);
  await registerOpenApi(app);
  await app.register(cors, {
    origin: "*",
    exposedHeaders: ["Link", "ETag", "X-Request-Id", ...(deps.rateLimiter ? RATE_LIMIT_HEADER_NAMES : [])],
  });
  registerJsonBodies(app);
  // A browser asking for an unknown URL outside the APIs gets the 404 page; API clients keep the JSON 404.
  registerErrorHandling(app, { wants: wantsPage, send: sendNotFoundPage });
  registerRequestLog(app);

  const principals = createPrincipalCache(
    identityLookup(async (secret) => (await deps.clients.identity.authenticateAccessToken({ secret })).principal),
    { ttlMs: deps.config.tokenCacheTtlMs },
  );
  const sessions = createSessionCache(deps.clients.identity, { ttlMs: deps.config.tokenCacheTtlMs });
  const urls = createUrls(deps.config.publicUrl, deps.config.webUrl);
  // Public routes: open to anyone, outside both APIs' scopes.
  metaRoutes(app, { webhookIps: deps.config.webhookIps ?? [] });
  openApiRoutes(app);
  const oidcIssuer = deps.config.oidcIssuer ?? deps.config.publicUrl;
  oidcDiscoveryRoutes(app, { clients: deps.clients, issuer: oidcIssuer });
  const pipelineAccess = createPipelineAccess(deps.clients);
  await registerRestApi(app, {
    deps: {
      clients: deps.clients,
      urls,
      publicUrl: deps.config.publicUrl,
      principals,
      pipelineAccess,
      // Unit tests' services change under the same ids without a version: they keep nothing unless asked to.
      answers: createAnswerCache({ maxBytes: deps.config.renderCacheBytes ?? 0 }),
    },
    artifactUrlBase: deps.config.artifacts.urlBase,
    rateLimiter: deps.rateLimiter,
  });
  // Forges' deliveries: public, authenticated by the webhook URL's token (and signature), outside both APIs.
  await registerWebhooks(app, { clients: deps.clients, urls });
  if (deps.config.artifacts.proxy) {
    await registerObjectProxy(app, { ...deps.config.artifacts, publicUrl: deps.config.publicUrl });
  }
  const agentCredentials = createAgentCredentialCache(deps.clients, { ttlMs: deps.config.agentCredentialTtlMs });
  await registerAgentApi(app, {
    clients: deps.clients,
    urls,
    logs: deps.config.agentLogs,
    credentials: agentCredentials,
    artifactUrlBase: deps.config.artifacts.urlBase,
    oidcIssuer,
    ...(deps.streams ? { streams: deps.streams } : {}),
  });
  // The pages last. The APIs' static paths win over the pages' patterns (`/{org}`, ...) in the router whatever the
  // order, and a request for an API's path that matches only a page's pattern still gets the API's JSON 404.
  await registerWeb(app, {
    clients: deps.clients,
    urls,
    pipelineAccess,
    sessions,
    webUrl: deps.config.webUrl,
    artifactUrlBase: deps.config.artifacts.urlBase,
    ...(deps.live ? { live: deps.live } : {}),
    ...(deps.pipelineChanges ? { pipelineChanges: deps.pipelineChanges } : {}),
  });
  await app.ready();
  return { app, principals, sessions, agentCredentials, routes };
}
