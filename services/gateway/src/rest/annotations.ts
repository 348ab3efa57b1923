import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { AnnotationSchema, renderAnnotation } from "../render/annotation.js";
import { responses, typed } from "../route-declarations/declare.js";
import { BuildParams, JobParams } from "../route-declarations/params.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

/**
 * A build's annotations over REST (Buildkite's annotations API; go-buildkite's `Annotations.ListByBuild` and
 * `ListByJob`): the build's own, or one job's job-scoped ones, highest priority first, paged with a Link header.
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
}
