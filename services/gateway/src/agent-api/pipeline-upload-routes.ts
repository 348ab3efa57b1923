import { Code, ConnectError } from "@connectrpc/connect";
import { PipelineUploadState } from "@conveyor/proto/builds";
import { describeFieldErrors, fieldErrorsOf } from "@conveyor/runtime";
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

/** What the agent reads when it polls an upload (its PipelineUploadStatus). */
const UploadStatus = Type.Object({
  state: Type.Union([
    Type.Literal("pending"),
    Type.Literal("processing"),
    Type.Literal("applied"),
    Type.Literal("rejected"),
  ]),
  message: Type.String(),
});

const STATE_NAMES: Record<PipelineUploadState, "pending" | "processing" | "applied" | "rejected"> = {
  [PipelineUploadState.UNSPECIFIED]: "pending",
  [PipelineUploadState.PENDING]: "pending",
  [PipelineUploadState.PROCESSING]: "processing",
  [PipelineUploadState.APPLIED]: "applied",
  [PipelineUploadState.REJECTED]: "rejected",
};

/** How long the agent waits before it first asks how an asynchronous upload went, and between asks (seconds). */
const POLL_AFTER_S = 1;

/**
 * `buildkite-agent pipeline upload` (docs/compatibility.md#pipeline-upload): the agent posts the pipeline it parsed and
 * interpolated, as JSON, with the upload's uuid, to `…/pipelines?async=true`. Asynchronously (the agent's way), the
 * upload is stored durably and answered 202 with a Location to poll, then planned and applied by the builds service,
 * so that the largest upload never meets the request deadline; without `async` it is applied before the answer (any
 * 2xx but 202 is success to the agent). The same uuid again changes nothing. A pipeline that cannot be used is 422
 * (synchronously) or `rejected` (when polled), with every problem in `message`, the only part the agent prints.
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
        response: { ...responses(201, Empty), 202: Empty },
      },
    },
    async (request, reply) => {
      const { jobId } = await jobAccess.job(request, request.params.id);
      const { pipeline, uuid } = request.body;
      const asynchronous = request.query.async === true;
      try {
        await clients.builds.uploadPipeline({
          jobId,
          uuid,
          pipeline: typeof pipeline === "string" ? pipeline : JSON.stringify(pipeline),
          replace: request.body.replace ?? false,
          asynchronous,
        });
      } catch (err) {
        const error = ConnectError.from(err);
        if (error.code !== Code.InvalidArgument) throw err;
        const message = `The pipeline could not be uploaded: ${describeFieldErrors(error)}`;
        throw new HttpError(422, message, { message, errors: fieldErrorsOf(error) });
      }
      if (!asynchronous) return reply.status(201).send({});
      const location = `/v3/jobs/${encodeURIComponent(request.params.id)}/pipelines/${encodeURIComponent(uuid)}`;
      return reply
        .status(202)
        .headers({ location, "retry-after": String(POLL_AFTER_S) })
        .send({});
    },
  );

  typed(app).get(
    "/v3/jobs/:id/pipelines/:uuid",
    {
      config: { credential: ["job", "agent"] },
      schema: {
        operationId: "agentPipelineUploadStatus",
        summary: "Where an asynchronous pipeline upload stands (the agent polls it until applied or rejected)",
        tags: ["agent"],
        params: Type.Object({ id: AgentJobParams.properties.id, uuid: text(64, { minLength: 1 }) }),
        response: responses(200, UploadStatus),
      },
    },
    async (request, reply) => {
      const { jobId } = await jobAccess.job(request, request.params.id);
      const { status } = await clients.builds.getPipelineUpload({ jobId, uuid: request.params.uuid });
      const state = STATE_NAMES[status?.state ?? PipelineUploadState.UNSPECIFIED];
      if (state === "pending" || state === "processing") reply.header("retry-after", String(POLL_AFTER_S));
      return reply.send({ state, message: status?.message ?? "" });
    },
  );
}
