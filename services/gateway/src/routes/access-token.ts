import { isoTime } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { arrayOf, errorSchema, nullableTimestamp, object, str } from "../render/schemas.js";
import { type RouteDeps, rpcOptions } from "./deps.js";

const accessTokenSchema = object({
  uuid: str,
  scopes: arrayOf(str),
  description: str,
  created_at: nullableTimestamp,
  user: object({ name: str, email: str }),
});

/** GET /v2/access-token (the calling token) and DELETE /v2/access-token (revoke it). */
export function accessTokenRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get(
    "/v2/access-token",
    { schema: { response: { 200: accessTokenSchema, "4xx": errorSchema } } },
    async (request) => {
      const { token, user } = request.principal ?? {};
      return {
        uuid: token?.id ?? "",
        scopes: token?.scopes ?? [],
        description: token?.description ?? "",
        created_at: isoTime(token?.createdAt),
        user: { name: user?.name ?? "", email: user?.email ?? "" },
      };
    },
  );

  app.delete("/v2/access-token", async (request, reply) => {
    const tokenId = request.principal?.token?.id ?? "";
    await deps.clients.identity.revokeAccessToken({ id: tokenId }, rpcOptions(request));
    // The revocation event would evict it too, but this instance must not honour the token even for a moment.
    deps.principals.evictToken(tokenId);
    return reply.status(204).send();
  });
}
