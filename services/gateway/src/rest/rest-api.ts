import type { FastifyInstance } from "fastify";
import { registerAuthentication } from "../auth/authenticate.js";
import { registerRateLimit } from "../rate-limit/rate-limit-hook.js";
import type { RateLimiter } from "../rate-limit/rate-limiter.js";
import { requireDocumentedRoutes } from "../route-declarations/declare.js";
import { accessTokenRoutes } from "./access-token.js";
import { accountRoutes } from "./account.js";
import { agentRestRoutes } from "./agents.js";
import { annotationRoutes } from "./annotations.js";
import { artifactRoutes, registerArtifactQueryToken } from "./artifacts.js";
import { buildRoutes } from "./builds.js";
import { clusterMaintainerRoutes } from "./cluster-maintainers.js";
import { clusterQueueRoutes } from "./cluster-queues.js";
import { clusterSecretRoutes } from "./cluster-secrets.js";
import { clusterRoutes } from "./clusters.js";
import { jobLogRoutes } from "./job-logs.js";
import { jobRoutes } from "./jobs.js";
import { memberRoutes } from "./members.js";
import { notificationWebhookRoutes } from "./notification-webhooks.js";
import { organizationRoutes } from "./organizations.js";
import { pipelineRoutes } from "./pipelines.js";
import { registryTokenRoutes } from "./registry-tokens.js";
import type { RouteDeps } from "./route-deps.js";
import { ruleRoutes } from "./rules.js";
import { scheduleRoutes } from "./schedules.js";
import { sourceProviderRoutes } from "./source-providers.js";
import { teamRoutes } from "./teams.js";

export interface RestApiOptions {
  deps: RouteDeps;
  /** The base signed artifact URLs carry (the object store, or the gateway's /objects proxy). */
  artifactUrlBase: string;
  /** Counts requests per organization (see rate-limit/); none: no limit and no headers. */
  rateLimiter?: RateLimiter;
}

/**
 * The REST API under /v2 (docs/compatibility.md), in its own encapsulated scope: every route in it declares its
 * documentation and the scope its token must carry, and every request to it is authenticated with a bearer token
 * and then counted against the rate limit, in that order (the limit counts the caller authentication found). Public
 * routes (the hello, health and the OpenAPI document) and the agent API are registered outside it, so none of
 * these hooks run for them, nor for unknown URLs (answered 404 by the app's own handler).
 */
export async function registerRestApi(app: FastifyInstance, opts: RestApiOptions): Promise<void> {
  await app.register(async (scope) => {
    requireDocumentedRoutes(scope);
    // Before authentication, which reads the Authorization header this may set from the query string.
    registerArtifactQueryToken(scope);
    registerAuthentication(scope, opts.deps.principals);
    if (opts.rateLimiter) registerRateLimit(scope, opts.rateLimiter);
    const { deps } = opts;
    accessTokenRoutes(scope, deps);
    accountRoutes(scope, opts.rateLimiter);
    organizationRoutes(scope, deps);
    memberRoutes(scope, deps);
    pipelineRoutes(scope, deps);
    scheduleRoutes(scope, deps);
    buildRoutes(scope, deps);
    jobLogRoutes(scope, deps);
    annotationRoutes(scope, deps);
    jobRoutes(scope, deps);
    agentRestRoutes(scope, deps);
    clusterRoutes(scope, deps);
    clusterQueueRoutes(scope, deps);
    clusterMaintainerRoutes(scope, deps);
    clusterSecretRoutes(scope, deps);
    teamRoutes(scope, deps);
    ruleRoutes(scope, deps);
    registryTokenRoutes(scope, deps);
    artifactRoutes(scope, deps, { urlBase: opts.artifactUrlBase });
    sourceProviderRoutes(scope, deps);
    notificationWebhookRoutes(scope, deps);
  });
}
