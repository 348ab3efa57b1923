import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { LRUCache } from "lru-cache";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { typed } from "../route-declarations/declare.js";
import { OIDC_CLAIMS_SUPPORTED } from "./oidc-claims-supported.js";

/**
 * How long the key set is reused. The agents service publishes a new key 15 s before it signs with it
 * (services/agents/src/oidc/oidc-keys.ts), so a key set this old still has every key that signs.
 */
const KEY_SET_TTL_MS = 5_000;

const tags = ["oidc"];

/** Where the issuer's documents live: under the issuer's own path (`https://ci.example/oidc` → `/oidc/.well-known/…`). */
export function oidcPaths(issuer: string): { discovery: string; jwks: string; jwksUri: string } {
  const base = new URL(issuer).pathname.replace(/\/$/, "");
  return {
    discovery: `${base}/.well-known/openid-configuration`,
    jwks: `${base}/.well-known/jwks`,
    jwksUri: `${issuer}/.well-known/jwks`,
  };
}

/** The OpenID discovery document of the jobs' OIDC tokens (docs/security.md#oidc-tokens). */
export function discoveryDocument(issuer: string) {
  return {
    issuer,
    jwks_uri: oidcPaths(issuer).jwksUri,
    response_types_supported: ["id_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["RS256"],
    scopes_supported: ["openid"],
    claims_supported: [...OIDC_CLAIMS_SUPPORTED],
  };
}

const DiscoveryBody = Type.Object({
  issuer: Type.String(),
  jwks_uri: Type.String(),
  response_types_supported: Type.Array(Type.String()),
  subject_types_supported: Type.Array(Type.String()),
  id_token_signing_alg_values_supported: Type.Array(Type.String()),
  scopes_supported: Type.Array(Type.String()),
  claims_supported: Type.Array(Type.String()),
});

const JwksBody = Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) });

/**
 * The issuer's OpenID discovery document and its key set (JWKS), public as a cloud's token exchange needs them:
 * no credential, outside both APIs. The key set comes from the agents service, which keeps the keys.
 */
export function oidcDiscoveryRoutes(
  app: FastifyInstance,
  opts: { clients: Pick<GatewayClients, "oidc">; issuer: string },
): void {
  const paths = oidcPaths(opts.issuer);
  const document = discoveryDocument(opts.issuer);
  // One entry: the key set, fetched by whichever request needs it first.
  const keySet = new LRUCache<"jwks", { keys: Array<Record<string, unknown>> }>({
    max: 1,
    ttl: KEY_SET_TTL_MS,
    fetchMethod: async () => JSON.parse((await opts.clients.oidc.getOidcKeySet({})).jwksJson),
  });
  typed(app).get(
    paths.discovery,
    {
      schema: {
        operationId: "getOidcDiscovery",
        summary: "The OpenID discovery document of jobs' OIDC tokens",
        tags,
        response: { 200: DiscoveryBody },
      },
    },
    async (_request, reply) => reply.header("cache-control", "public, max-age=300").send(document),
  );
  typed(app).get(
    paths.jwks,
    {
      schema: {
        operationId: "getOidcKeySet",
        summary: "The public keys jobs' OIDC tokens are verified with (JWKS)",
        tags,
        response: { 200: JwksBody },
      },
    },
    async (_request, reply) => {
      const jwks = await keySet.fetch("jwks");
      return reply.header("cache-control", "public, max-age=5").send(jwks ?? { keys: [] });
    },
  );
}
