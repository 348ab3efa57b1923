import type { FastifyInstance } from "fastify";
import { callerOf, organizationAccess } from "../../auth/authenticate.js";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { JobParams } from "../../route-declarations/params.js";
import { teamsOf } from "../pages/build-data.js";
import { jobAnchorPath } from "../pages/build-paths.js";
import { submittedFields } from "../pages/build-unblock-form.js";
import type { WebDeps } from "../web-deps.js";
import { answerAction } from "./build-action-answer.js";

/**
 * A job's actions on the build page (docs/pages.md#actions): retry a finished job, and unblock a block or input step
 * with values for its fields. Each takes the access its REST twin takes (rest/jobs.ts) and calls the same RPC: retry
 * needs build access; unblock needs read access, the step's allowed_teams or build access deciding in the builds
 * service, which also checks the values as it checks REST's.
 */
export function jobActionRoutes(scope: FastifyInstance, deps: WebDeps): void {
  const route = typed(scope);
  const options = { preHandler: [deps.requireSignIn, deps.requireCsrf], schema: { params: JobParams } };
  const path = "/:org/:pipeline/builds/:number/jobs/:job";

  route.post(`${path}/retry`, options, async (request, reply) =>
    answerAction(request, reply, deps, request.params, async () => {
      const { org, number, job: jobId } = request.params;
      const access = organizationAccess(request, org);
      const { pipeline } = await deps.pipelineAccess.pipeline(request, access, request.params.pipeline, "build");
      const { job } = await deps.clients.builds.retryJob({
        pipelineId: pipeline.id,
        number,
        jobId,
        user: callerOf(request),
      });
      if (!job) throw new HttpError(404, "No job found");
      return jobAnchorPath(access.organization?.slug ?? org, pipeline.slug, number, job.id);
    }),
  );

  route.post(`${path}/unblock`, options, async (request, reply) => {
    const values = submittedFields(request.body);
    return answerAction(
      request,
      reply,
      deps,
      request.params,
      async () => {
        const { org, number, job: jobId } = request.params;
        const access = organizationAccess(request, org);
        const { pipeline, canBuild } = await deps.pipelineAccess.pipeline(
          request,
          access,
          request.params.pipeline,
          "read",
        );
        const fields = Object.fromEntries(Object.entries(values).map(([key, v]) => [key, { values: v }]));
        const { job } = await deps.clients.builds.unblockJob({
          pipelineId: pipeline.id,
          number,
          jobId,
          user: callerOf(request),
          fields,
          callerTeams: await teamsOf(request, deps, access),
          readOnly: !canBuild,
        });
        return jobAnchorPath(access.organization?.slug ?? org, pipeline.slug, number, job?.id ?? jobId);
      },
      { jobId: request.params.job, values },
    );
  });
}
