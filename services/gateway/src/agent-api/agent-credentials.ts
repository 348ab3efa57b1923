import {
  type AuthenticateAgentCredentialResponse,
  CredentialKind,
  CredentialRevokedSchema,
} from "@conveyor/proto/agents";
import { type Logger, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { createSecretCache, serviceLookup } from "../auth/secret-cache.js";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { HttpError } from "../errors/http-error.js";

/** Who called the agent API. */
export type AgentCredential = AuthenticateAgentCredentialResponse;

/** The credential kinds a route of the agent API accepts, by name. */
export type CredentialKindName = "registration" | "agent" | "job";

/** The name of each credential kind, as routes declare it and `GET /v3/token` answers it. */
export const KIND_NAMES: Record<CredentialKind, CredentialKindName | undefined> = {
  [CredentialKind.UNSPECIFIED]: undefined,
  [CredentialKind.REGISTRATION]: "registration",
  [CredentialKind.AGENT]: "agent",
  [CredentialKind.JOB]: "job",
};

declare module "fastify" {
  interface FastifyRequest {
    /** The caller of an agent API route, set before its handler runs. */
    agentCredential: AgentCredential | null;
  }
  interface FastifyContextConfig {
    /** Agent API routes: the credential kinds the route accepts. */
    credential?: readonly CredentialKindName[];
  }
}

/** The agent's answer to a missing or unusable credential (it exits on 401 from ping and heartbeat). */
const INVALID = "Invalid or missing agent credential: send `Authorization: Token <token>`";

/** The secret of an `Authorization: Token <secret>` header (the agent API's scheme), or undefined. */
export function agentSecret(header: string | undefined): string | undefined {
  if (!header) return undefined;
  return /^Token\s+(\S+)\s*$/i.exec(header)?.[1];
}

/** A short-lived cache of agent credential lookups, dropped early when the agents service revokes one. */
export function createAgentCredentialCache(clients: Pick<GatewayClients, "agents">, opts: { ttlMs: number }) {
  const cache = createSecretCache<AgentCredential>(
    serviceLookup((secret) => clients.agents.authenticateAgentCredential({ secret })),
    { ...opts, namesOf: credentialNames },
  );
  return {
    get: cache.get,
    /** Drops what a revocation names: a registration token, an agent (its access token and job tokens) or a job. */
    revoke(ids: { tokenId?: string; agentId?: string; jobId?: string }) {
      if (ids.tokenId) cache.evictNamed(`token:${ids.tokenId}`);
      if (ids.agentId) cache.evictNamed(`agent:${ids.agentId}`);
      if (ids.jobId) cache.evictNamed(`job:${ids.jobId}`);
    },
    clear: cache.clear,
  };
}

/** What a revocation may name a credential by: its registration token (registration credentials only), agent, job. */
function credentialNames(c: AgentCredential): string[] {
  const names: string[] = [];
  if (c.kind === CredentialKind.REGISTRATION && c.tokenId !== "") names.push(`token:${c.tokenId}`);
  if (c.agentId !== "") names.push(`agent:${c.agentId}`);
  if (c.jobId !== "") names.push(`job:${c.jobId}`);
  return names;
}

export type AgentCredentialCache = ReturnType<typeof createAgentCredentialCache>;

/**
 * Drops revoked agent credentials as soon as the agents service announces them (every gateway needs every one). A
 * subscription that breaks drops every cached credential (it may have missed a revocation) before it is made again.
 * Returns a function that stops it.
 */
export function subscribeCredentialEvents(nc: NatsConnection, cache: AgentCredentialCache, logger: Logger) {
  return subscribeEvents(
    { nc },
    SUBJECTS.agents.credentialRevoked,
    CredentialRevokedSchema,
    logger,
    (e) => cache.revoke({ tokenId: e.tokenId, agentId: e.agentId, jobId: e.jobId }),
    () => cache.clear(),
  );
}

/**
 * The check every route of the agent API's scope (agent-api.ts) shares: it must declare the credential kinds it
 * accepts (checked when routes are added), and the caller must present one of them in the `Token` scheme (401
 * otherwise).
 */
export function registerAgentAuthentication(scope: FastifyInstance, cache: AgentCredentialCache): void {
  scope.decorateRequest("agentCredential", null);
  scope.addHook("onRoute", (route) => {
    if (!route.config?.credential?.length) throw new Error(`agent API route ${route.url} declares no credential`);
  });
  scope.addHook("onRequest", async (request) => {
    const kinds = request.routeOptions.config.credential;
    // Unreachable while onRoute checks every route; a route without credentials is refused rather than open.
    if (!kinds) throw new HttpError(401, INVALID);
    const secret = agentSecret(request.headers.authorization);
    if (!secret) throw new HttpError(401, INVALID);
    const credential = await cache.get(secret);
    const kind = credential && KIND_NAMES[credential.kind];
    if (!credential || !kind || !kinds.includes(kind)) throw new HttpError(401, INVALID);
    request.agentCredential = credential;
  });
}

/** The credential of a request that passed registerAgentAuthentication. */
export function credentialOf(request: FastifyRequest): AgentCredential {
  if (!request.agentCredential) throw new HttpError(401, INVALID);
  return request.agentCredential;
}
