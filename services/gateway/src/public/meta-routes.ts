import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { typed } from "../route-declarations/declare.js";

const tags = ["meta"];

/** Whether an Accept header asks for HTML before JSON (a browser's navigation does; API clients send JSON or any). */
function prefersHtml(accept: string | undefined): boolean {
  const types = (accept ?? "").split(",").map((t) => t.split(";")[0]?.trim());
  const html = types.indexOf("text/html");
  const json = types.indexOf("application/json");
  return html !== -1 && (json === -1 || html < json);
}

/**
 * GET / (Buildkite's unauthenticated hello, or a browser's way to its dashboard), GET /healthz (liveness for probes
 * and the launcher) and GET /v2/meta (Buildkite's unauthenticated meta; docs/compatibility.md#organizations-members-and-the-token).
 */
export function metaRoutes(app: FastifyInstance, opts: { webhookIps: readonly string[] }): void {
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
    async (request, reply) => {
      // A person's browser opening the site's root goes to their dashboard (web/pages/dashboard-page.ts); API
      // clients, which do not ask for HTML, keep Buildkite's hello.
      if (prefersHtml(request.headers.accept)) return reply.redirect("/dashboard", 302);
      return { message: "🛠", timestamp: Math.floor(Date.now() / 1000) };
    },
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
  typed(app).get(
    "/v2/meta",
    {
      config: { public: true },
      schema: {
        operationId: "getMeta",
        summary: "Buildkite's meta: the addresses outbound requests come from, as the operator published them",
        tags,
        response: { 200: Type.Object({ webhook_ips: Type.Array(Type.String()) }) },
      },
    },
    // Outbound requests (webhooks, notifications, commit statuses) leave from wherever the operator runs the services:
    // the addresses they set in WEBHOOK_IPS, none by default (docs/compatibility.md#organizations-members-and-the-token).
    async () => ({ webhook_ips: [...opts.webhookIps] }),
  );
}
