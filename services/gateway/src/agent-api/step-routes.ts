import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, preValidationAsyncHookHandler } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { Str } from "../render/schemas.js";
import { responses, typed } from "../route-declarations/declare.js";
import { Id, text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { Empty } from "./agent-routes.js";
import { checkStepUpdate, refuse, stepExport, stepObject } from "./step-export.js";

/** A step by its id or key (keys are the pipeline's, up to the path segment's bound). */
const StepParams = Type.Object({ step: Id });
const BuildParams = Type.Object({ id: Id });
/** BUILDKITE_BUILD_ID, which the agent sends with every step call. */
const buildId = Type.Optional(text(100));

const ExportBody = Type.Object(
  { attribute: Type.Optional(text(100)), build_id: buildId, format: Type.Optional(text(20)) },
  { additionalProperties: false },
);
const UpdateBody = Type.Object(
  {
    idempotency_uuid: Type.Optional(text(64)),
    build_id: buildId,
    attribute: text(100, { minLength: 1 }),
    // A label: the builds service bounds the result (docs/limits.md).
    value: Type.Optional(text(4096)),
    append: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const CancelBody = Type.Object(
  {
    build_id: buildId,
    force: Type.Optional(Type.Boolean()),
    // Buildkite reads it only with force, which is refused here.
    force_grace_period: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })),
  },
  { additionalProperties: false },
);
const tags = ["agent"];

/**
 * A preValidation hook refusing body fields the route's schema does not name (the schema compiler drops them
 * silently otherwise): 422 naming each (docs/compatibility.md#steps-from-inside-a-job).
 */
function onlyDeclared(schema: { properties: Record<string, unknown> }): preValidationAsyncHookHandler {
  const known = Object.keys(schema.properties);
  return async (request) => {
    const body = request.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) return;
    const unknown = Object.keys(body).filter((k) => !known.includes(k));
    if (unknown.length > 0)
      throw new HttpError(422, `Validation Failed: ${unknown.slice(0, 20).join(", ").slice(0, 200)} not taken`, {
        message: `Validation Failed: ${unknown.slice(0, 20).join(", ").slice(0, 200)} not taken`,
        errors: unknown.slice(0, 20).map((field) => ({ field: field.slice(0, 100), code: "is not taken" })),
      });
  };
}

/**
 * `buildkite-agent step get/update/cancel` and `build cancel`, run inside a job (docs/compatibility.md#steps-from-inside-a-job):
 * they act on the steps of the caller's build, and the build itself, through the job the credential names (a job
 * token's own job, or the job an agent holds), only while that job runs (docs/security.md).
 */
export function stepRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;
  const config = { credential: ["job", "agent"] } as const;
  const route = typed(app);

  route.post(
    "/v3/steps/:step/export",
    {
      config,
      preValidation: onlyDeclared(ExportBody),
      schema: {
        operationId: "agentStepExport",
        summary: "An attribute of a step of the job's build, or the whole step (buildkite-agent step get)",
        tags,
        params: StepParams,
        body: ExportBody,
        response: responses(200, Type.Object({ output: Str })),
      },
    },
    async (request) => {
      const { jobId } = await jobAccess.callingJob(request, request.body.build_id);
      const { step } = await clients.builds.getStep({ ref: { jobId, step: request.params.step } });
      if (!step) throw new HttpError(404, "No step found");
      return { output: stepExport(stepObject(step), request.body.attribute ?? "", request.body.format ?? "") };
    },
  );

  route.put(
    "/v3/steps/:step",
    {
      config,
      preValidation: onlyDeclared(UpdateBody),
      schema: {
        operationId: "agentStepUpdate",
        summary: "Change a step's label (buildkite-agent step update label)",
        tags,
        params: StepParams,
        body: UpdateBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      checkStepUpdate(request.body.attribute);
      const { jobId } = await jobAccess.callingJob(request, request.body.build_id);
      await clients.builds.updateStep({
        ref: { jobId, step: request.params.step },
        label: request.body.value ?? "",
        append: request.body.append ?? false,
        idempotencyUuid: request.body.idempotency_uuid ?? "",
      });
      return {};
    },
  );

  route.post(
    "/v3/steps/:step/cancel",
    {
      config,
      preValidation: onlyDeclared(CancelBody),
      schema: {
        operationId: "agentStepCancel",
        summary: "Cancel a step's unfinished jobs (buildkite-agent step cancel)",
        tags,
        params: StepParams,
        body: CancelBody,
        response: responses(200, Type.Object({ uuid: Str })),
      },
    },
    async (request) => {
      if (request.body.force)
        throw refuse("force", "is not served: cancel without --force (jobs on agents stop as they do)");
      const { jobId } = await jobAccess.callingJob(request, request.body.build_id);
      const { step } = await clients.builds.cancelStep({ ref: { jobId, step: request.params.step } });
      return { uuid: step?.id ?? "" };
    },
  );

  route.post(
    "/v3/builds/:id/cancel",
    {
      config,
      schema: {
        operationId: "agentBuildCancel",
        summary: "Cancel the job's build (buildkite-agent build cancel)",
        tags,
        params: BuildParams,
        response: responses(200, Type.Object({ uuid: Str })),
      },
    },
    async (request) => {
      const { jobId } = await jobAccess.callingJob(request, request.params.id);
      const { job } = await clients.builds.getJob({ jobId });
      if (!job) throw new HttpError(404, "No build found");
      await clients.builds.cancelBuild({ pipelineId: job.pipelineId, number: job.buildNumber, jobId });
      return { uuid: job.buildId };
    },
  );
}
