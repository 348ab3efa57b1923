import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { typed } from "../route-declarations/declare.js";

const tags = ["meta"];

/** GET / (Buildkite's unauthenticated hello) and GET /healthz (liveness for probes and the launcher). */
export function metaRoutes(app: FastifyInstance): void {
  typed(app).get(
    "/",
    {
      schema: {
        operationId: "hello",
        summary: "Buildkite's unauthenticated hello",
        tags,
        response: { 200: Type.Object({ message: Type.String(), timestamp: Type.Integer() }) },
      },
    },
    async () => ({ message: "🛠", timestamp: Math.floor(Date.now() / 1000) }),
  );
  typed(app).get(
    "/healthz",
    {
      schema: {
        operationId: "healthz",
        summary: "Liveness of the gateway",
        tags,
        response: { 200: Type.Object({ status: Type.String() }) },
      },
    },
    async () => ({ status: "ok" }),
  );
}
