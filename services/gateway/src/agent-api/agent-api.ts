import type { FastifyInstance } from "fastify";
import type { AgentStreams } from "../agent-stream/agent-streams.js";
import { registerStreamPings, STREAM_PINGS_PATH } from "../agent-stream/stream-route.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import type { Urls } from "../render/urls.js";
import { requireDocumentedRoutes } from "../route-declarations/declare.js";
import { agentControlRoutes } from "./agent-control-routes.js";
import { type AgentCredentialCache, registerAgentAuthentication } from "./agent-credentials.js";
import type { LogSettings } from "./agent-job.js";
import { agentRoutes } from "./agent-routes.js";
import { annotationAgentRoutes } from "./annotation-routes.js";
import { artifactAgentRoutes } from "./artifact-routes.js";
import { createJobAccess, type JobAccess } from "./job-access.js";
import { jobRoutes } from "./job-routes.js";
import { metaDataRoutes } from "./meta-data-routes.js";
import { oidcAgentRoutes } from "./oidc-routes.js";
import { createOrganizationLookup, type OrganizationLookup } from "./organizations.js";
import { pipelineUploadRoutes } from "./pipeline-upload-routes.js";
import { secretAgentRoutes } from "./secret-routes.js";
import { stepRoutes } from "./step-routes.js";

/** What the agent API's route modules receive. */
export interface AgentApiDeps {
  clients: GatewayClients;
  urls: Urls;
  logs: LogSettings;
  jobAccess: JobAccess;
  organizations: OrganizationLookup;
  /** The base signed artifact URLs carry (the object store, or the gateway's /objects proxy). */
  artifactUrlBase: string;
}

export { STREAM_PINGS_PATH } from "../agent-stream/stream-route.js";

/**
 * The agent API under /v3 (docs/compatibility.md#agent-api), in its own encapsulated scope: every route in it
 * declares its documentation and the credential kinds it takes, callers authenticate in the `Token` scheme, and log
 * chunks are taken as raw bytes (gzip, sent as text/plain) where the REST API takes JSON only. It is not rate limited.
 * The streaming-pings path is registered beside the scope, since it is no /v3 route: served by agent-stream/ when
 * the gateway holds streams, else answered 404 (connect-go reports Unimplemented and the agent polls for good).
 */
export async function registerAgentApi(
  app: FastifyInstance,
  opts: {
    clients: GatewayClients;
    urls: Urls;
    logs: LogSettings;
    credentials: AgentCredentialCache;
    artifactUrlBase: string;
    /** The issuer of jobs' OIDC tokens (OIDC_ISSUER). */
    oidcIssuer: string;
    /** The streams this gateway holds (agent-stream/); none: StreamPings answers 404. */
    streams?: AgentStreams;
  },
): Promise<void> {
  if (opts.streams) {
    await registerStreamPings(app, { credentials: opts.credentials, streams: opts.streams, keepaliveMs: 30_000 });
  } else {
    app.post(STREAM_PINGS_PATH, {
      onRequest: async (_request, reply) =>
        reply.status(404).send({ message: "Streaming pings are not served here: poll /v3/ping" }),
      handler: async () => ({}),
    });
  }
  await app.register(async (scope) => {
    scope.addContentTypeParser(["text/plain", "application/octet-stream"], { parseAs: "buffer" }, (_req, body, done) =>
      done(null, body),
    );
    // The agent sends some bodies only when it has something to say (start, finish): no body is an empty object.
    scope.addHook("preValidation", async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    });
    requireDocumentedRoutes(scope);
    registerAgentAuthentication(scope, opts.credentials);
    const deps: AgentApiDeps = {
      clients: opts.clients,
      urls: opts.urls,
      logs: opts.logs,
      jobAccess: createJobAccess(opts.clients),
      organizations: createOrganizationLookup(opts.clients),
      artifactUrlBase: opts.artifactUrlBase,
    };
    agentRoutes(scope, deps);
    jobRoutes(scope, deps);
    metaDataRoutes(scope, deps);
    annotationAgentRoutes(scope, deps);
    agentControlRoutes(scope, deps);
    pipelineUploadRoutes(scope, deps);
    artifactAgentRoutes(scope, deps);
    stepRoutes(scope, deps);
    secretAgentRoutes(scope, deps);
    oidcAgentRoutes(scope, deps, { issuer: opts.oidcIssuer });
  });
}
