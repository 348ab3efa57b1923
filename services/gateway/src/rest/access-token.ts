import { isoTime } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { NullableTimestamp, Str } from "../render/schemas.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import type { RouteDeps } from "./route-deps.js";

const AccessTokenSchema = Type.Object({
  uuid: Str,
  scopes: Type.Array(Str),
  description: Str,
  created_at: NullableTimestamp,
  user: Type.Object({ name: Str, email: Str }),
});

const tags = ["access-token"];

/** GET /v2/access-token (the calling token) and DELETE /v2/access-token (revoke it). */
export function accessTokenRoutes(app: FastifyInstance, deps: RouteDeps): void {
  typed(app).get(
    "/v2/access-token",
    {
      config: { scope: null },
      schema: {
        operationId: "getAccessToken",
        summary: "The calling token: its uuid, scopes and user",
        tags,
        response: responses(200, AccessTokenSchema),
      },
    },
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

  typed(app).delete(
    "/v2/access-token",
    {
      config: { scope: null },
      schema: { operationId: "revokeAccessToken", summary: "Revoke the calling token", tags, response: noContent },
    },
    async (request, reply) => {
      const tokenId = request.principal?.token?.id ?? "";
      await deps.clients.identity.revokeAccessToken({ id: tokenId });
      // The revocation event would evict it too, but this instance must not honour the token even for a moment.
      deps.principals.evictToken(tokenId);
      return reply.status(204).send();
    },
  );
}
