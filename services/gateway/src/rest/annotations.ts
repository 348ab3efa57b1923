import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { AnnotationSchema, renderAnnotation } from "../render/annotation.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BuildParams, Id, JobParams, MAX_INT32, text } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

/** The largest body the builds service takes is 1 MiB of Markdown (docs/limits.md): this many characters. */
const MAX_BODY_CHARS = 1024 * 1024;
/** A 1 MiB body escaped as JSON can take up to 6 bytes a byte (`\u0000`): the route takes that much. */
const CREATE_BODY_LIMIT = 6 * MAX_BODY_CHARS + 64 * 1024;

/** Buildkite's create body (go-buildkite's AnnotationCreate); the builds service judges the values. */
const CreateFields = {
  body: text(MAX_BODY_CHARS, { description: "Markdown", minLength: 1 }),
  style: Type.Optional(text(64, { description: "default, success, info, warning or error" })),
  context: Type.Optional(text(1024, { description: "unique per build (per job for a job's); default: default" })),
  append: Type.Optional(Type.Boolean({ description: "append the body to the context's annotation" })),
  priority: Type.Optional(Type.Integer({ minimum: -MAX_INT32 - 1, maximum: MAX_INT32, description: "1 to 10" })),
};
const CreateBody = Type.Object(CreateFields);
const KNOWN_FIELDS = Object.keys(CreateFields);

/**
 * A build's annotations over REST (Buildkite's annotations API; go-buildkite's `Annotations.ListByBuild`,
 * `ListByJob`, `Create`, `CreateForJob`, `Delete` and `DeleteForJob`): the build's own, or one job's job-scoped
 * ones. Lists are highest priority first, paged with a Link header; a create makes, replaces or appends to the
 * annotation of its context (201), a delete removes one by its UUID (204).
 */
export function annotationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const build = "/v2/organizations/:org/pipelines/:pipeline/builds/:number";

  for (const [path, params, operationId, summary] of [
    [`${build}/annotations`, BuildParams, "listBuildAnnotations", "List a build's annotations"],
    [`${build}/jobs/:job/annotations`, JobParams, "listJobAnnotations", "List a job's job-scoped annotations"],
  ] as const) {
    typed(app).get(
      path,
      {
        config: { scope: "read_builds" },
        schema: {
          operationId,
          summary,
          tags: ["annotations"],
          params,
          querystring: PagingQuery,
          response: responses(200, Type.Array(AnnotationSchema)),
        },
      },
      async (request, reply) => {
        const { org, pipeline: slug, number } = request.params;
        const job = "job" in request.params ? request.params.job : "";
        const access = organizationAccess(request, org);
        const paging = pageOf(request.query);
        const { pipeline } = await deps.pipelineAccess.pipeline(request, access, slug, "read");
        const res = await deps.clients.annotations.listAnnotations({
          pipelineId: pipeline.id,
          number,
          jobId: job,
          ...paging,
        });
        const link = linkHeader(deps.publicUrl, request.url, paging, { hasMore: res.hasMore });
        if (link) reply.header("link", link);
        return res.annotations.map(renderAnnotation);
      },
    );
  }

  for (const [path, params, one, suffix, scope] of [
    [`${build}/annotations`, BuildParams, Type.Object({ ...BuildParams.properties, annotation: Id }), "", "build"],
    [
      `${build}/jobs/:job/annotations`,
      JobParams,
      Type.Object({ ...JobParams.properties, annotation: Id }),
      "ForJob",
      "job",
    ],
  ] as const) {
    typed(app).post(
      path,
      {
        config: { scope: "write_builds" },
        bodyLimit: CREATE_BODY_LIMIT,
        preValidation: onlyFields(KNOWN_FIELDS),
        schema: {
          operationId: `createAnnotation${suffix}`,
          summary: `Create, replace or append to the annotation of a context of a ${scope}`,
          tags: ["annotations"],
          params,
          body: CreateBody,
          response: responses(201, AnnotationSchema),
        },
      },
      async (request, reply) => {
        const buildId = await buildIdOf(deps, request, request.params, "build");
        const { body } = request;
        const res = await deps.clients.annotations.annotateBuild({
          buildId,
          jobId: "job" in request.params ? request.params.job : "",
          byPerson: true,
          body: body.body,
          context: body.context ?? "",
          style: body.style ?? "",
          append: body.append ?? false,
          ...(body.priority !== undefined ? { priority: body.priority } : {}),
          scope,
        });
        if (!res.annotation) throw new HttpError(500, "The annotation was not returned");
        return reply.status(201).send(renderAnnotation(res.annotation));
      },
    );

    typed(app).delete(
      `${path}/:annotation`,
      {
        config: { scope: "write_builds" },
        schema: {
          operationId: `deleteAnnotation${suffix}`,
          summary: `Delete an annotation of a ${scope} by its UUID`,
          tags: ["annotations"],
          params: one,
          response: noContent,
        },
      },
      async (request, reply) => {
        const buildId = await buildIdOf(deps, request, request.params, "build");
        await deps.clients.annotations.removeAnnotation({
          buildId,
          jobId: "job" in request.params ? request.params.job : "",
          annotationId: request.params.annotation,
        });
        return reply.status(204).send();
      },
    );
  }
}

/** The build a route names, when the caller may take `action` on its pipeline (404 otherwise). */
async function buildIdOf(
  deps: RouteDeps,
  request: FastifyRequest,
  params: { org: string; pipeline: string; number: number },
  action: "read" | "build",
): Promise<string> {
  const access = organizationAccess(request, params.org);
  const { pipeline } = await deps.pipelineAccess.pipeline(request, access, params.pipeline, action);
  const res = await deps.clients.builds.getBuild({ pipelineId: pipeline.id, number: params.number });
  const id = res.build?.id ?? "";
  if (id === "") throw new HttpError(404, "No build found");
  return id;
}
