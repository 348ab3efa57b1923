import type { Logger } from "@conveyor/runtime";
import cors from "@fastify/cors";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import { registerAuthentication } from "./auth/authenticate.js";
import { createPipelineAccess } from "./auth/pipeline-access.js";
import { createPrincipalCache, identityLookup, type PrincipalCache } from "./auth/principal-cache.js";
import type { GatewayClients } from "./clients.js";
import type { GatewayConfig } from "./config.js";
import { registerErrorHandling } from "./error-handler.js";
import { createUrls } from "./render/urls.js";
import { accessTokenRoutes } from "./routes/access-token.js";
import { buildRoutes } from "./routes/builds.js";
import type { RouteDeps } from "./routes/deps.js";
import { memberRoutes } from "./routes/members.js";
import { metaRoutes } from "./routes/meta.js";
import { organizationRoutes } from "./routes/organizations.js";
import { pipelineRoutes } from "./routes/pipelines.js";
import { registryTokenRoutes } from "./routes/registry-tokens.js";
import { ruleRoutes } from "./routes/rules.js";
import { teamRoutes } from "./routes/teams.js";

export interface AppDeps {
  config: Pick<GatewayConfig, "publicUrl" | "webUrl" | "tokenCacheTtlMs" | "bodyLimitBytes">;
  clients: GatewayClients;
  logger?: Logger;
}

export interface GatewayApp {
  app: FastifyInstance;
  principals: PrincipalCache;
}

/** Builds the gateway (no listening, no side effects): plugins, auth, error handling and every route module. */
export async function buildApp(deps: AppDeps): Promise<GatewayApp> {
  const app: FastifyInstance = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger as FastifyBaseLogger } : { logger: false }),
    bodyLimit: deps.config.bodyLimitBytes,
    requestIdHeader: "x-request-id",
    disableRequestLogging: true,
    // Bodies are checked strictly (no coercion), and every problem is reported at once.
    ajv: { customOptions: { coerceTypes: false, allErrors: true } },
    routerOptions: { ignoreTrailingSlash: false, ignoreDuplicateSlashes: true },
  });
  await app.register(cors, { origin: "*", exposedHeaders: ["Link"] });
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
    identityLookup(async (secret, requestId) => {
      const res = await deps.clients.identity.authenticateAccessToken(
        { secret },
        { headers: { "x-request-id": requestId } },
      );
      return res.principal;
    }),
    { ttlMs: deps.config.tokenCacheTtlMs },
  );
  registerAuthentication(app, principals);
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      "request",
    );
  });

  const routeDeps: RouteDeps = {
    clients: deps.clients,
    urls: createUrls(deps.config.publicUrl, deps.config.webUrl),
    publicUrl: deps.config.publicUrl,
    principals,
    pipelineAccess: createPipelineAccess(deps.clients),
  };
  metaRoutes(app);
  accessTokenRoutes(app, routeDeps);
  organizationRoutes(app, routeDeps);
  memberRoutes(app, routeDeps);
  pipelineRoutes(app, routeDeps);
  buildRoutes(app, routeDeps);
  teamRoutes(app, routeDeps);
  ruleRoutes(app, routeDeps);
  registryTokenRoutes(app, routeDeps);
  await app.ready();
  return { app, principals };
}
