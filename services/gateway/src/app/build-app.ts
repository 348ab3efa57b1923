import type { Logger } from "@conveyor/runtime";
import cors from "@fastify/cors";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { registerAgentApi } from "../agent-api/agent-api.js";
import { type AgentCredentialCache, createAgentCredentialCache } from "../agent-api/agent-credentials.js";
import { createAnswerCache } from "../answer-cache/answer-cache.js";
import { registerAuthentication } from "../auth/authenticate.js";
import { createPipelineAccess } from "../auth/pipeline-access.js";
import { createPrincipalCache, identityLookup, type PrincipalCache } from "../auth/principal-cache.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import type { GatewayConfig } from "../config.js";
import { registerErrorHandling } from "../errors/error-handler.js";
import { registerObjectProxy } from "../object-proxy/object-proxy.js";
import { metaRoutes } from "../public/meta-routes.js";
import { openApiRoutes, registerOpenApi } from "../public/openapi.js";
import { RATE_LIMIT_HEADER_NAMES, registerRateLimit } from "../rate-limit/rate-limit-hook.js";
import type { RateLimiter } from "../rate-limit/rate-limiter.js";
import { createUrls } from "../render/urls.js";
import { accessTokenRoutes } from "../rest/access-token.js";
import { agentRestRoutes } from "../rest/agents.js";
import { annotationRoutes } from "../rest/annotations.js";
import { artifactRoutes, registerArtifactQueryToken } from "../rest/artifacts.js";
import { buildRoutes } from "../rest/builds.js";
import { jobLogRoutes } from "../rest/job-logs.js";
import { jobRoutes } from "../rest/jobs.js";
import { memberRoutes } from "../rest/members.js";
import { organizationRoutes } from "../rest/organizations.js";
import { pipelineRoutes } from "../rest/pipelines.js";
import { registryTokenRoutes } from "../rest/registry-tokens.js";
import type { RouteDeps } from "../rest/route-deps.js";
import { ruleRoutes } from "../rest/rules.js";
import { teamRoutes } from "../rest/teams.js";
import { type DeclaredRoute, registerRouteDeclarations } from "../route-declarations/declare.js";
import { clientLimitOptions, DEFAULT_CLIENT_LIMITS, registerClientLimits } from "./client-limits.js";
import { registerRequestIds, requestIdOptions } from "./request-id.js";
import { urlForLog } from "./request-log.js";

export interface AppDeps {
  config: Pick<
    GatewayConfig,
    "publicUrl" | "webUrl" | "tokenCacheTtlMs" | "bodyLimitBytes" | "agentCredentialTtlMs" | "agentLogs" | "artifacts"
  > &
    Partial<Pick<GatewayConfig, "clientLimits" | "renderCacheBytes">>;
  clients: GatewayClients;
  logger?: Logger;
  /** Counts REST requests per organization (main.ts shares its counts with the other gateways); none: no limit. */
  rateLimiter?: RateLimiter;
}

export interface GatewayApp {
  app: FastifyInstance;
  principals: PrincipalCache;
  /** Every route the app serves (method and URL pattern), as declared: what the OpenAPI document must cover. */
  routes: readonly DeclaredRoute[];
  /** Agent API credentials, cached; main.ts drops revoked ones on the agents service's events. */
  agentCredentials: AgentCredentialCache;
}

/** Builds the gateway (no listening, no side effects): plugins, auth, error handling and every route module. */
export async function buildApp(deps: AppDeps): Promise<GatewayApp> {
  const clientLimits = deps.config.clientLimits ?? DEFAULT_CLIENT_LIMITS;
  const limits = clientLimitOptions(clientLimits);
  const app: FastifyInstance = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger as FastifyBaseLogger } : { logger: false }),
    bodyLimit: deps.config.bodyLimitBytes,
    ...requestIdOptions,
    ...limits,
    // Requests are logged by the onResponse hook below (one line each, the URL redacted), not by Fastify.
    logController: new LogController({ disableRequestLogging: true }),
    // Bodies are checked strictly (no coercion), and every problem is reported at once.
    ajv: { customOptions: { coerceTypes: false, allErrors: true } },
    routerOptions: { ...limits.routerOptions, ignoreTrailingSlash: false, ignoreDuplicateSlashes: true },
  });
  registerRequestIds(app);
  registerClientLimits(app, clientLimits);
  const routes = registerRouteDeclarations(app);
  await registerOpenApi(app);
  await app.register(cors, {
    origin: "*",
    exposedHeaders: ["Link", "ETag", "X-Request-Id", ...(deps.rateLimiter ? RATE_LIMIT_HEADER_NAMES : [])],
  });
  // The API takes JSON bodies only: anything else is a 415, not a string handed to a route.
  app.removeContentTypeParser("text/plain");
  // Scripts often send `Content-Type: application/json` on every request, bodyless DELETEs included: an empty body
  // is no body, as in Buildkite's API, rather than a JSON parse error.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    return parseJson(request, text, done);
  });
  registerErrorHandling(app);
  const principals = createPrincipalCache(
    identityLookup(async (secret) => (await deps.clients.identity.authenticateAccessToken({ secret })).principal),
    { ttlMs: deps.config.tokenCacheTtlMs },
  );
  registerArtifactQueryToken(app);
  registerAuthentication(app, principals);
  // After authentication, whose hook sets the principal the request is counted against.
  if (deps.rateLimiter) registerRateLimit(app, deps.rateLimiter);
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: urlForLog(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      "request",
    );
  });

  const routeDeps: RouteDeps = {
    clients: deps.clients,
    urls: createUrls(deps.config.publicUrl, deps.config.webUrl),
    publicUrl: deps.config.publicUrl,
    principals,
    pipelineAccess: createPipelineAccess(deps.clients),
    // Unit tests' services change under the same ids without a version: they keep nothing unless asked to.
    answers: createAnswerCache({ maxBytes: deps.config.renderCacheBytes ?? 0 }),
  };
  metaRoutes(app);
  openApiRoutes(app);
  accessTokenRoutes(app, routeDeps);
  organizationRoutes(app, routeDeps);
  memberRoutes(app, routeDeps);
  pipelineRoutes(app, routeDeps);
  buildRoutes(app, routeDeps);
  jobLogRoutes(app, routeDeps);
  annotationRoutes(app, routeDeps);
  jobRoutes(app, routeDeps);
  agentRestRoutes(app, routeDeps);
  teamRoutes(app, routeDeps);
  ruleRoutes(app, routeDeps);
  registryTokenRoutes(app, routeDeps);
  artifactRoutes(app, routeDeps, { urlBase: deps.config.artifacts.urlBase });
  if (deps.config.artifacts.proxy) {
    await registerObjectProxy(app, { ...deps.config.artifacts, publicUrl: deps.config.publicUrl });
  }
  const agentCredentials = createAgentCredentialCache(deps.clients, { ttlMs: deps.config.agentCredentialTtlMs });
  await registerAgentApi(app, {
    clients: deps.clients,
    urls: routeDeps.urls,
    logs: deps.config.agentLogs,
    credentials: agentCredentials,
    artifactUrlBase: deps.config.artifacts.urlBase,
  });
  await app.ready();
  return { app, principals, agentCredentials, routes };
}
