import { Code, ConnectError } from "@connectrpc/connect";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../../auth/authenticate.js";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { Id, Slug } from "../../route-declarations/params.js";
import { buildPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";

/** The address of a job known only by its id (an agent's current job): it finds the job's build. */
export function currentJobPath(org: string, jobId: string): string {
  return `/organizations/${encodeURIComponent(org)}/jobs/${encodeURIComponent(jobId)}`;
}

/**
 * GET /organizations/{org}/jobs/{id}: sends the person to the job on its build's page. The agents pages link to an
 * agent's current job this way, so that listing agents costs no job lookups and an agent never shows the pipeline
 * of a job the person may not read: that pipeline is checked here, as the REST API checks it (404 when unreadable).
 */
export function currentJobRedirect(scope: FastifyInstance, deps: WebDeps): void {
  typed(scope).get(
    "/organizations/:org/jobs/:job",
    { preHandler: deps.requireSignIn, schema: { params: Type.Object({ org: Slug, job: Id }) } },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const job = await deps.clients.builds.getJob({ jobId: request.params.job }).then(
        (res) => res.job,
        (err: unknown) => {
          if (err instanceof ConnectError && err.code === Code.NotFound) return undefined;
          throw err;
        },
      );
      if (!job || job.organizationId !== access.organization?.id) throw new HttpError(404, "No job found");
      const { pipeline } = await deps.pipelineAccess.pipeline(request, access, job.pipelineId, "read");
      const to = `${buildPath(request.params.org, pipeline.slug, job.buildNumber)}#${encodeURIComponent(job.id)}`;
      return reply.redirect(to, 302);
    },
  );
}
