import type { FastifyReply, FastifyRequest } from "fastify";
import type { PipelineAccessChecks } from "../auth/pipeline-access.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import type { Urls } from "../render/urls.js";
import type { SafeHtml } from "./html.js";
import type { JobRowCache } from "./pages/build-jobs.js";
import type { BuildReader } from "./pages/build-reader.js";

/** A preHandler of the pages' routes. */
export type PageHook = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** What every page and action module receives (web/web-plugin.ts assembles it). */
export interface WebDeps {
  clients: GatewayClients;
  urls: Urls;
  /** The REST API's pipeline access policy, unchanged: pages show and do exactly what the person's token could. */
  pipelineAccess: PipelineAccessChecks;
  /** Sends a signed-out person to sign in (`/login?next=<path>`); a route needing a person runs it first. */
  requireSignIn: PageHook;
  /** Refuses a state-changing request without the session's CSRF token (403); every POST runs it. */
  requireCsrf: PageHook;
  /** The hidden input carrying the CSRF token, for every form that posts. */
  csrfField(request: FastifyRequest): SafeHtml;
  /** Builds with every attempt, kept by version and confirmed current at each read (pages/build-reader.ts). */
  readBuild: BuildReader;
  /** The build page's rendered job rows, kept by what they show (pages/build-jobs.ts). */
  jobRows: JobRowCache;
  /** Tells of every pipeline change (the gateway's pipeline cache); without it, pages keep no pipeline lists. */
  pipelineChanges?: (listener: () => void) => void;
}
