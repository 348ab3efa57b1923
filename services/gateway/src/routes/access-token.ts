import type { FastifyInstance } from "fastify";
import { arrayOf, errorSchema, object, str } from "../render/schemas.js";

/** GET /v2/access-token: the calling token's UUID, scopes and description. */
export function accessTokenRoutes(app: FastifyInstance): void {
  app.get(
    "/v2/access-token",
    {
      schema: { response: { 200: object({ uuid: str, scopes: arrayOf(str), description: str }), "4xx": errorSchema } },
    },
    async (request) => {
      const token = request.principal?.token;
      return { uuid: token?.id ?? "", scopes: token?.scopes ?? [], description: token?.description ?? "" };
    },
  );
}
