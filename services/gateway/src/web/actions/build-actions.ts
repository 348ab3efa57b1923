import type { FastifyInstance } from "fastify";
import { callerOf, organizationAccess } from "../../auth/authenticate.js";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { BuildParams } from "../../route-declarations/params.js";
import { failedJobsToRetry } from "../pages/build-header.js";
import { buildPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";
import { answerAction } from "./build-action-answer.js";

/**
 * The build's actions on its page (docs/pages.md#actions): cancel, rebuild, and retry every failed job. Each needs
 * what its REST twin needs (build access to the pipeline: 404 unseen, 403 not allowed) and calls the same RPC, so
 * the builds service applies the same state rules; every one is a POST that carries the session's CSRF token.
 */
export function buildActionRoutes(scope: FastifyInstance, deps: WebDeps): void {
  const route = typed(scope);
  const options = { preHandler: [deps.requireSignIn, deps.requireCsrf], schema: { params: BuildParams } };
  const path = "/:org/:pipeline/builds/:number";

  /** The pipeline of a build action, when the person may build it. */
  const buildable = async (
    request: Parameters<typeof organizationAccess>[0],
    params: { org: string; pipeline: string },
  ) => {
    const access = organizationAccess(request, params.org);
    const { pipeline } = await deps.pipelineAccess.pipeline(request, access, params.pipeline, "build");
    return { access, pipeline, orgSlug: access.organization?.slug ?? params.org };
  };

  route.post(`${path}/cancel`, options, async (request, reply) =>
    answerAction(request, reply, deps, request.params, async () => {
      const { pipeline, orgSlug } = await buildable(request, request.params);
      await deps.clients.builds.cancelBuild({ pipelineId: pipeline.id, number: request.params.number });
      return buildPath(orgSlug, pipeline.slug, request.params.number);
    }),
  );

  route.post(`${path}/rebuild`, options, async (request, reply) =>
    answerAction(request, reply, deps, request.params, async () => {
      const { pipeline, orgSlug } = await buildable(request, request.params);
      const { build } = await deps.clients.builds.rebuildBuild({
        pipeline,
        organizationSlug: orgSlug,
        number: request.params.number,
        creator: callerOf(request),
      });
      if (!build) throw new HttpError(404, "No build found");
      return buildPath(orgSlug, pipeline.slug, build.number);
    }),
  );

  // Buildkite's "Retry failed jobs": each failed job the person may retry, one RetryJob each, as REST's retry.
  route.post(`${path}/retry-failed`, options, async (request, reply) =>
    answerAction(request, reply, deps, request.params, async () => {
      const { pipeline, orgSlug } = await buildable(request, request.params);
      const number = request.params.number;
      const { build } = await deps.clients.builds.getBuild({ pipelineId: pipeline.id, number });
      if (!build) throw new HttpError(404, "No build found");
      const user = callerOf(request);
      for (const job of failedJobsToRetry(build)) {
        await deps.clients.builds.retryJob({ pipelineId: pipeline.id, number, jobId: job.id, user });
      }
      return buildPath(orgSlug, pipeline.slug, number);
    }),
  );
}
