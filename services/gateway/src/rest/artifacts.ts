import type { Build } from "@conveyor/proto/builds";
import { type Static, Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import type { PipelineAction } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import { type ArtifactPlace, ArtifactSchema, renderArtifact } from "../render/artifact.js";
import { Str } from "../render/schemas.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BuildNumber, BuildParams, Id, JobParams, Slug, text } from "../route-declarations/params.js";
import { linkHeader, pageOf, pagingProperties } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const ArtifactParams = Type.Object({ org: Slug, pipeline: Slug, number: BuildNumber, job: Id, id: Id });
const ListQuery = Type.Object({
  ...pagingProperties,
  state: Type.Optional(text(32, { description: "new, error, finished or expired" })),
});
const tags = ["artifacts"];

const BUILD_PATH = "/v2/organizations/:org/pipelines/:pipeline/builds/:number";
/** The one artifact route, also the delete route that takes `access_token` in the query. */
export const ARTIFACT_PATH = `${BUILD_PATH}/jobs/:job/artifacts/:id`;

const ARTIFACT_STATES = new Set(["new", "error", "finished", "expired"]);

/**
 * Lets the delete-artifact route take its token as `?access_token=` (docs/compatibility.md#artifact-operations), and only that route:
 * the token becomes the Authorization header before authentication reads it, and leaves the URL, so no log shows
 * it. Register it before the authentication hook.
 */
export function registerArtifactQueryToken(app: FastifyInstance): void {
  app.addHook("onRequest", async (request) => {
    if (request.method !== "DELETE" || request.routeOptions.url !== ARTIFACT_PATH) return;
    const raw = request.raw.url ?? "";
    const at = raw.indexOf("?");
    if (at < 0) return;
    const params = new URLSearchParams(raw.slice(at + 1));
    const token = params.get("access_token");
    if (token === null) return;
    params.delete("access_token");
    const rest = params.toString();
    request.raw.url = raw.slice(0, at) + (rest === "" ? "" : `?${rest}`);
    if (!request.headers.authorization && token !== "") request.headers.authorization = `Bearer ${token}`;
  });
}

/**
 * The five artifact operations (docs/compatibility.md#artifact-operations): list by build, list by job, get, download (302 to a signed
 * URL valid 60 seconds, also in the body as `{url}`) and delete (204). Access to the pipeline is as for builds; an
 * artifact of another organization, build or job is 404. Expired artifacts are listed and read, and their download
 * is 410 Gone; an artifact not (yet) uploaded has no download (404).
 */
export function artifactRoutes(app: FastifyInstance, deps: RouteDeps, opts: { urlBase: string }): void {
  const { clients, urls } = deps;

  /** The build of a route, when the caller may take `action` on its pipeline. */
  const buildOf = async (
    request: FastifyRequest & { params: { org: string; pipeline: string; number: number } },
    action: PipelineAction,
  ) => {
    const access = organizationAccess(request, request.params.org);
    const number = request.params.number;
    const { pipeline } = await deps.pipelineAccess.pipeline(request, access, request.params.pipeline, action);
    const { build } = await clients.builds.getBuild({ pipelineId: pipeline.id, number, includeRetriedJobs: true });
    if (!build) throw new HttpError(404, "No build found");
    const place: ArtifactPlace = {
      orgSlug: access.organization?.slug ?? "",
      pipelineSlug: pipeline.slug,
      buildNumber: build.number,
    };
    return { build, place };
  };

  /** The job of a job route, which must be one of the build's (404 otherwise). */
  const jobOf = (build: Build, jobId: string) => {
    const job = build.jobs.find((j) => j.id === jobId.toLowerCase());
    if (!job) throw new HttpError(404, "No job found");
    return job;
  };

  const stateOf = (raw: string | undefined) => {
    if (raw === undefined || raw === "") return "";
    if (!ARTIFACT_STATES.has(raw)) throw new HttpError(400, `state must be one of ${[...ARTIFACT_STATES].join(", ")}`);
    return raw;
  };

  const list = async (
    request: FastifyRequest & {
      params: { org: string; pipeline: string; number: number; job?: string };
      query: Static<typeof ListQuery>;
    },
    reply: { header(name: string, value: string): unknown },
  ) => {
    const paging = pageOf(request.query);
    const state = stateOf(request.query.state);
    const { build, place } = await buildOf(request, "read");
    const jobId = request.params.job === undefined ? "" : jobOf(build, request.params.job).id;
    const res = await clients.artifacts.listArtifacts({
      buildId: build.id,
      jobId,
      page: paging.page,
      perPage: paging.perPage,
      state,
    });
    const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
    if (link) reply.header("link", link);
    return res.artifacts.map((a) => renderArtifact(a, urls, place));
  };

  const route = typed(app);
  const listed = { querystring: ListQuery, response: responses(200, Type.Array(ArtifactSchema)) };

  route.get(
    `${BUILD_PATH}/artifacts`,
    {
      config: { scope: "read_artifacts" },
      schema: {
        operationId: "listBuildArtifacts",
        summary: "List the artifacts of a build's jobs",
        tags,
        params: BuildParams,
        ...listed,
      },
    },
    list,
  );

  route.get(
    `${BUILD_PATH}/jobs/:job/artifacts`,
    {
      config: { scope: "read_artifacts" },
      schema: {
        operationId: "listJobArtifacts",
        summary: "List the artifacts of a job",
        tags,
        params: JobParams,
        ...listed,
      },
    },
    list,
  );

  route.get(
    ARTIFACT_PATH,
    {
      config: { scope: "read_artifacts" },
      schema: {
        operationId: "getArtifact",
        summary: "Get an artifact",
        tags,
        params: ArtifactParams,
        response: responses(200, ArtifactSchema),
      },
    },
    async (request) => {
      const { build, place } = await buildOf(request, "read");
      const job = jobOf(build, request.params.job);
      const { artifact } = await clients.artifacts.getArtifact({
        buildId: build.id,
        jobId: job.id,
        id: request.params.id,
      });
      if (!artifact) throw new HttpError(404, "No artifact found");
      return renderArtifact(artifact, urls, place);
    },
  );

  route.get(
    `${ARTIFACT_PATH}/download`,
    {
      config: { scope: "read_artifacts" },
      schema: {
        operationId: "downloadArtifact",
        summary: "302 to a signed download URL valid 60 seconds (also in the body as url)",
        tags,
        params: ArtifactParams,
        response: responses(302, Type.Object({ url: Str })),
      },
    },
    async (request, reply) => {
      const { build } = await buildOf(request, "read");
      const job = jobOf(build, request.params.job);
      const res = await clients.artifacts.signArtifactDownload({
        buildId: build.id,
        jobId: job.id,
        id: request.params.id,
        urlBase: opts.urlBase,
      });
      if (res.artifact?.state === "expired") throw new HttpError(410, "Artifact has expired");
      if (res.url === "") throw new HttpError(404, "No artifact found: it has not been uploaded");
      return reply.status(302).header("location", res.url).send({ url: res.url });
    },
  );

  route.delete(
    ARTIFACT_PATH,
    {
      config: { scope: "write_artifacts" },
      schema: {
        operationId: "deleteArtifact",
        summary: "Delete an artifact (the token may also come as ?access_token=)",
        tags,
        params: ArtifactParams,
        querystring: Type.Object({ access_token: Type.Optional(text(256)) }),
        response: noContent,
      },
    },
    async (request, reply) => {
      const { build } = await buildOf(request, "build");
      const job = jobOf(build, request.params.job);
      await clients.artifacts.deleteArtifact({ buildId: build.id, jobId: job.id, id: request.params.id });
      return reply.status(204).send();
    },
  );
}
