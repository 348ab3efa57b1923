import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { responses, typed } from "../route-declarations/declare.js";
import { Id, MAX_INT32, text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { Empty } from "./agent-routes.js";
import { AgentJobParams } from "./job-routes.js";

/** The largest body the service takes is 1 MiB of Markdown: this many characters, however they are counted. */
const MAX_BODY_CHARS = 1024 * 1024;
/** A 1 MiB body escaped as JSON can take up to 6 bytes a byte (`\u0000`): the route takes that much. */
const ANNOTATE_BODY_LIMIT = 6 * MAX_BODY_CHARS + 64 * 1024;

/** `buildkite-agent annotate`'s body (docs/compatibility.md#agent-endpoints); the builds service checks the values in detail. */
const AnnotateBody = Type.Object({
  body: Type.Optional(text(MAX_BODY_CHARS, { description: "Markdown" })),
  context: Type.Optional(text(1024)),
  style: Type.Optional(text(64)),
  append: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.Integer({ minimum: -MAX_INT32 - 1, maximum: MAX_INT32 })),
  scope: Type.Optional(text(64)),
});
const tags = ["agent"];

/**
 * Annotations from inside a job (docs/compatibility.md#agent-endpoints): `buildkite-agent annotate` creates, replaces or appends
 * to the annotation of a context, and `annotation remove` removes one (its context percent-decoded: the agent
 * sends `.` as `%2E`). The job names its build; only the job's own credential reaches it. Bad input is 422 with
 * a sentence as its message, which the agent prints.
 */
export function annotationAgentRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;
  const config = { credential: ["job", "agent"] } as const;

  const route = typed(app);

  route.post(
    "/v3/jobs/:id/annotations",
    {
      config,
      bodyLimit: ANNOTATE_BODY_LIMIT,
      schema: {
        operationId: "agentAnnotate",
        summary: "Create, replace or append to the annotation of a context",
        tags,
        params: AgentJobParams,
        body: AnnotateBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { jobId, buildId } = await jobAccess.job(request, request.params.id);
      const body = request.body;
      await clients.annotations.annotateBuild({
        buildId,
        jobId,
        body: body.body ?? "",
        context: body.context ?? "",
        style: body.style ?? "",
        append: body.append ?? false,
        // The agent leaves out a zero priority: absent keeps the annotation's own (or takes the default).
        ...(body.priority ? { priority: body.priority } : {}),
        scope: body.scope ?? "",
      });
      return {};
    },
  );

  route.delete(
    "/v3/jobs/:id/annotations/:context",
    {
      config,
      schema: {
        operationId: "agentRemoveAnnotation",
        summary: "Remove the annotation of a context",
        tags,
        params: Type.Object({ id: Id, context: text(1024) }),
        querystring: Type.Object({ scope: Type.Optional(text(64)) }),
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { jobId, buildId } = await jobAccess.job(request, request.params.id);
      await clients.annotations.removeAnnotation({
        buildId,
        jobId,
        context: request.params.context,
        scope: request.query.scope ?? "",
      });
      return {};
    },
  );
}
