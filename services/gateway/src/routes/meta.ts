import type { FastifyInstance } from "fastify";

/** GET / (Buildkite's unauthenticated hello) and GET /healthz (liveness for probes and the launcher). */
export function metaRoutes(app: FastifyInstance): void {
  app.get("/", async () => ({ message: "🛠", timestamp: Math.floor(Date.now() / 1000) }));
  app.get("/healthz", async () => ({ status: "ok" }));
}
