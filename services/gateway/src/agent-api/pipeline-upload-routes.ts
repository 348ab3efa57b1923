import { Code, ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { responses, typed } from "../route-declarations/declare.js";
import { text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { Empty } from "./agent-routes.js";
import { AgentJobParams } from "./job-routes.js";

/** The largest upload request: the builds service bounds the pipeline itself at 1 MiB of text. */
const MAX_UPLOAD_BODY_BYTES = 2 * 1024 * 1024;

/** How many field errors the message lists before it stops. */
const LISTED_ERRORS = 10;

/** The upload: its uuid (the same on every retry), the pipeline the agent parsed, and whether it replaces the rest. */
const UploadBody = Type.Object({
  uuid: text(64, { minLength: 1 }),
  pipeline: Type.Union([
    Type.Record(Type.String(), Type.Unknown()),
    Type.Array(Type.Unknown()),
    text(MAX_UPLOAD_BODY_BYTES),
  ]),
  replace: Type.Optional(Type.Boolean()),
});

/**
 * `buildkite-agent pipeline upload` (docs/compatibility.md#pipeline-upload): the agent posts the pipeline it parsed and
 * interpolated, as JSON, with the upload's uuid. The upload is applied before the answer (any 2xx but 202 is
 * success to the agent); the same uuid again changes nothing. A pipeline that cannot be used is 422 with every
 * problem in `message`, the only part the agent prints.
 */
export function pipelineUploadRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;

  typed(app).post(
    "/v3/jobs/:id/pipelines",
    {
      config: { credential: ["job", "agent"] },
      bodyLimit: MAX_UPLOAD_BODY_BYTES,
      schema: {
        operationId: "agentUploadPipeline",
        summary: "Add steps to the job's build (buildkite-agent pipeline upload), applied before the answer",
        tags: ["agent"],
        params: AgentJobParams,
        querystring: Type.Object({ async: Type.Optional(Type.Boolean()) }),
        body: UploadBody,
        response: responses(201, Empty),
      },
    },
    async (request, reply) => {
      const { jobId } = await jobAccess.job(request, request.params.id);
      const { pipeline } = request.body;
      try {
        await clients.builds.uploadPipeline({
          jobId,
          uuid: request.body.uuid,
          pipeline: typeof pipeline === "string" ? pipeline : JSON.stringify(pipeline),
          replace: request.body.replace ?? false,
        });
      } catch (err) {
        const error = ConnectError.from(err);
        if (error.code !== Code.InvalidArgument) throw err;
        const errors = fieldErrorsOf(error);
        const listed = errors.slice(0, LISTED_ERRORS).map((e) => `${e.field} ${e.code}`);
        if (errors.length > LISTED_ERRORS) listed.push(`and ${errors.length - LISTED_ERRORS} more`);
        const message = `The pipeline could not be uploaded: ${listed.join("; ") || error.rawMessage}`;
        throw new HttpError(422, message, { message, errors });
      }
      return reply.status(201).send({});
    },
  );
}
