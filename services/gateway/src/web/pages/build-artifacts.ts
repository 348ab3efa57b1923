import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { BuildNumber, Id, Slug } from "../../route-declarations/params.js";
import type { WebDeps } from "../web-deps.js";
import { buildAccess } from "./build-data.js";

const ArtifactParams = Type.Object({ org: Slug, pipeline: Slug, number: BuildNumber, job: Id, id: Id });

/**
 * GET /{org}/{pipeline}/builds/{number}/jobs/{job}/artifacts/{id}: an artifact's download from the build page, for
 * people who may read the pipeline: as REST's download route, a redirect to a signed URL valid 60 seconds (410 for
 * an expired artifact, 404 for one not uploaded). The artifacts service signs it for the configured URL base.
 */
export function buildArtifactRoutes(scope: FastifyInstance, deps: WebDeps & { artifactUrlBase: string }): void {
  typed(scope).get(
    "/:org/:pipeline/builds/:number/jobs/:job/artifacts/:id",
    { preHandler: deps.requireSignIn, schema: { params: ArtifactParams } },
    async (request, reply) => {
      const { pipeline } = await buildAccess(request, deps, request.params);
      const { number, job: jobId, id } = request.params;
      const { build } = await deps.clients.builds.getBuild({
        pipelineId: pipeline.id,
        number,
        includeRetriedJobs: true,
      });
      const job = build?.jobs.find((j) => j.id === jobId.toLowerCase());
      if (!build || !job) throw new HttpError(404, "No artifact found");
      const res = await deps.clients.artifacts.signArtifactDownload({
        buildId: build.id,
        jobId: job.id,
        id,
        urlBase: deps.artifactUrlBase,
      });
      if (res.artifact?.state === "expired") throw new HttpError(410, "Artifact has expired");
      if (res.url === "") throw new HttpError(404, "No artifact found: it has not been uploaded");
      return reply.redirect(res.url, 302);
    },
  );
}
