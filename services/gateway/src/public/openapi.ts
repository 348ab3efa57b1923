import swagger from "@fastify/swagger";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { typed } from "../route-declarations/declare.js";

/** Where the document is served. */
export const OPENAPI_PATH = "/v2/openapi.json";

/**
 * Routes the document leaves out, by path prefix, each with its reason: the object store proxy passes S3 requests
 * through byte for byte (its API is S3's, signed URLs the gateway hands out), and HEAD routes are Fastify's copies
 * of the GET routes.
 */
export const UNDOCUMENTED_PREFIXES = ["/objects"] as const;

/**
 * Whether a route belongs in the document: the REST (/v2) and agent (/v3) APIs, not the object store proxy, the
 * health check or the agent's streaming-pings probe.
 */
export function isApiRoute(url: string): boolean {
  if (!url.startsWith("/v2") && !url.startsWith("/v3")) return false;
  return !UNDOCUMENTED_PREFIXES.some((p) => url === p || url.startsWith(`${p}/`));
}

const BEARER_DESCRIPTION =
  "An API access token: `Authorization: Bearer <token>`. Each operation names the scope it needs (`x-scope`, and " +
  "the scopes of its security requirement); a missing or unknown token is 401, a token without the scope is 403.";
const AGENT_DESCRIPTION =
  "An agent credential: `Authorization: Token <token>`, a registration token, an agent access token or a job " +
  "token, as each operation's `x-credential` lists.";

/**
 * Registers @fastify/swagger, which collects every route declared after it into an OpenAPI 3.1 document: the
 * route's schemas, its operationId, summary and tags, and from its config the security requirement (the bearer
 * scheme with the route's scope, or the agent's Token scheme with the credential kinds it takes). Register before
 * any route.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Conveyor",
        description:
          "A Buildkite-compatible CI service: the REST API under /v2 (bearer tokens with scopes) and the agent API " +
          "under /v3 (Token credentials), as buildkite-agent and go-buildkite speak them.",
        version: "2",
      },
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer", description: BEARER_DESCRIPTION },
          agentToken: { type: "apiKey", in: "header", name: "Authorization", description: AGENT_DESCRIPTION },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      if (!isApiRoute(url)) {
        return { schema: { ...schema, hide: true }, url };
      }
      const config = route.config ?? {};
      const extra: Record<string, unknown> = {};
      if (url.startsWith("/v2")) {
        if (config.public) extra.security = [];
        else {
          extra.security = [{ bearer: config.scope ? [config.scope] : [] }];
          extra["x-scope"] = config.scope ?? null;
        }
      } else if (url.startsWith("/v3") && config.credential) {
        extra.security = [{ agentToken: [...config.credential] }];
        extra["x-credential"] = [...config.credential];
      } else {
        extra.security = [];
      }
      return { schema: { ...schema, ...extra } as typeof schema, url };
    },
  });
}

/** GET /v2/openapi.json: the document of every route, open to anyone (it holds no data, only the API's shape). */
export function openApiRoutes(app: FastifyInstance): void {
  typed(app).get(
    OPENAPI_PATH,
    {
      config: { public: true },
      schema: {
        operationId: "getOpenApi",
        summary: "The OpenAPI 3.1 document of the REST and agent APIs",
        tags: ["meta"],
        response: { 200: Type.Object({ openapi: Type.String() }, { additionalProperties: true }) },
      },
    },
    async () => app.swagger() as unknown as { openapi: string },
  );
}
