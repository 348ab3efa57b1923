import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Build, BuildUserSchema } from "@conveyor/proto/builds";
import type { OrganizationAccess } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import type { PipelineAction } from "../auth/pipeline-access.js";
import { HttpError } from "../http-error.js";
import { linkHeader, pagingQuerySchema, parsePaging } from "../paging.js";
import { buildSchema, renderBuild } from "../render/build.js";
import type { JobDetail } from "../render/job.js";
import { arrayOf, errorSchema } from "../render/schemas.js";
import { parseBoolean, parseBuildListQuery, type RawQuery } from "./build-query.js";
import { type RouteDeps, rpcOptions } from "./deps.js";

type OrgParams = { org: string };
type PipelineParams = { org: string; pipeline: string };
type BuildParams = PipelineParams & { number: string };

/** The body of a create-build request: types only; the builds service judges presence and values. */
export interface CreateBuildBody {
  commit?: string;
  branch?: string;
  message?: string | null;
  author?: { name?: string | null; email?: string | null; username?: string | null } | null;
  clean_checkout?: boolean | null;
  env?: Record<string, string> | null;
  ignore_pipeline_branch_filters?: boolean | null;
  meta_data?: Record<string, string> | null;
  pull_request_base_branch?: string | null;
  pull_request_id?: number | null;
  pull_request_repository?: string | null;
}

const nullable = (type: string) => ({ type: [type, "null"] }) as const;
const stringMap = { type: ["object", "null"], additionalProperties: { type: "string" } } as const;

export const createBuildBodySchema = {
  type: "object",
  properties: {
    commit: { type: "string" },
    branch: { type: "string" },
    message: nullable("string"),
    author: {
      type: ["object", "null"],
      properties: { name: nullable("string"), email: nullable("string"), username: nullable("string") },
    },
    clean_checkout: nullable("boolean"),
    env: stringMap,
    ignore_pipeline_branch_filters: nullable("boolean"),
    meta_data: stringMap,
    pull_request_base_branch: nullable("string"),
    pull_request_id: nullable("integer"),
    pull_request_repository: nullable("string"),
  },
} as const;

const listQuerySchema = { type: "object", properties: pagingQuerySchema } as const;

const response = (ok: object, okStatus = 200) => ({ [okStatus]: ok, "4xx": errorSchema });

const NO_BUILD = () => new HttpError(404, "No build found");
const MAX_INT32 = 2 ** 31 - 1;

/** A build number from the path; anything but a positive 32-bit integer names no build. */
function buildNumber(raw: string): number {
  if (!/^\d{1,10}$/.test(raw)) throw NO_BUILD();
  const n = Number(raw);
  if (n < 1 || n > MAX_INT32) throw NO_BUILD();
  return n;
}

/** The requesting user, as builds record their creator. */
function creatorOf(request: FastifyRequest): MessageInitShape<typeof BuildUserSchema> | undefined {
  const user = request.principal?.user;
  if (!user) return undefined;
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    avatarUrl: user.avatarUrl,
    createdAt: user.createdAt,
  };
}

/**
 * The builds routes: the three lists (all organizations, one organization, one pipeline), get, create, cancel and
 * rebuild. Each maps the request to one builds RPC; lists add at most one pipelines lookup per page.
 */
export function buildRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;

  /**
   * The pipeline of a build route, by slug within the organization, when the caller may take `action` on it:
   * unknown or not readable by the caller → 404 "No pipeline found", action not allowed → 403 "Forbidden".
   */
  const pipelineOf = async (
    request: FastifyRequest<{ Params: PipelineParams }>,
    access: OrganizationAccess,
    action: PipelineAction,
  ) => {
    const res = await clients.pipelines.getPipeline(
      { organizationId: access.organization?.id ?? "", pipeline: request.params.pipeline },
      rpcOptions(request),
    );
    if (!res.pipeline) throw new HttpError(404, "No pipeline found");
    const granted = await deps.pipelineAccess.require(request, access, res.pipeline, action);
    return { pipeline: res.pipeline, canEdit: granted.edit };
  };

  /** Renders one build of a known pipeline. */
  const renderOne = (
    build: Build | undefined,
    access: OrganizationAccess,
    { pipeline, canEdit }: { pipeline: Pipeline; canEdit: boolean },
    detail: JobDetail,
  ) => {
    if (!build) throw NO_BUILD();
    return renderBuild(build, { urls, orgSlug: access.organization?.slug ?? "", pipeline, canEdit, detail });
  };

  /**
   * Lists one page of builds among `accesses` (optionally of one known pipeline) and renders it. The embedded
   * pipelines of an organization-wide page come from one batch lookup, unless exclude_pipeline asks for none.
   * Organization-wide pages cover only the pipelines the caller may read.
   */
  const listPage = async (
    request: FastifyRequest<{ Querystring: RawQuery }>,
    reply: { header(name: string, value: string): unknown },
    accesses: OrganizationAccess[],
    known?: { pipeline: Pipeline; canEdit: boolean },
  ) => {
    const pipeline = known?.pipeline;
    const paging = parsePaging(request.query as { page?: string; per_page?: string });
    const query = parseBuildListQuery(request.query);
    const orgs = new Map(accesses.flatMap((a) => (a.organization ? [[a.organization.id, a] as const] : [])));
    if (orgs.size === 0) return [];
    const visible = known ? undefined : await deps.pipelineAccess.accessible(request, [...orgs.values()]);
    if (visible && visible.everywhere.size === 0 && visible.pipelines.size === 0) return [];
    const canEdit = (build: Build) =>
      known
        ? known.canEdit
        : ((visible?.everywhere.get(build.organizationId) ?? visible?.pipelines.get(build.pipelineId))?.edit ?? false);
    const res = await clients.builds.listBuilds(
      {
        ...query.filters,
        organizationIds: visible ? [...visible.everywhere.keys()] : [...orgs.keys()],
        pipelineIds: visible ? [...visible.pipelines.keys()] : [],
        pipelineId: pipeline?.id ?? "",
        page: paging.page,
        perPage: paging.perPage,
      },
      rpcOptions(request),
    );
    const link = linkHeader(deps.publicUrl, request.url, paging, { hasMore: res.hasMore });
    if (link) reply.header("link", link);

    const pipelines = new Map<string, Pipeline>();
    if (pipeline) pipelines.set(pipeline.id, pipeline);
    else if (!query.excludePipeline && res.builds.length > 0) {
      const ids = [...new Set(res.builds.map((b) => b.pipelineId))];
      const organizationIds = [...new Set(res.builds.map((b) => b.organizationId))];
      const batch = await clients.pipelines.batchGetPipelines({ organizationIds, ids }, rpcOptions(request));
      for (const p of batch.pipelines) pipelines.set(p.id, p);
    }
    return res.builds.flatMap((build) => {
      const access = orgs.get(build.organizationId);
      if (!access?.organization) return [];
      return [
        renderBuild(
          build,
          {
            urls,
            orgSlug: access.organization.slug,
            pipeline: query.excludePipeline ? null : (pipelines.get(build.pipelineId) ?? null),
            canEdit: canEdit(build),
            detail: "list",
          },
          { excludeJobs: query.filters.excludeJobs },
        ),
      ];
    });
  };

  const listSchema = { querystring: listQuerySchema, response: response(arrayOf(buildSchema)) };

  app.get<{ Querystring: RawQuery }>("/v2/builds", { schema: listSchema }, async (request, reply) =>
    listPage(request, reply, request.principal?.organizations ?? []),
  );

  app.get<{ Params: OrgParams; Querystring: RawQuery }>(
    "/v2/organizations/:org/builds",
    { schema: listSchema },
    async (request, reply) => listPage(request, reply, [organizationAccess(request, request.params.org)]),
  );

  app.get<{ Params: PipelineParams; Querystring: RawQuery }>(
    "/v2/organizations/:org/pipelines/:pipeline/builds",
    { schema: listSchema },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const pipeline = await pipelineOf(request, access, "read");
      return listPage(request, reply, [access], pipeline);
    },
  );

  app.get<{ Params: BuildParams; Querystring: { include_retried_jobs?: string } }>(
    "/v2/organizations/:org/pipelines/:pipeline/builds/:number",
    {
      schema: {
        querystring: { type: "object", properties: { include_retried_jobs: { type: "string" } } },
        response: response(buildSchema),
      },
    },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const number = buildNumber(request.params.number);
      const includeRetriedJobs = parseBoolean("include_retried_jobs", request.query.include_retried_jobs);
      const pipeline = await pipelineOf(request, access, "read");
      const res = await clients.builds.getBuild(
        { pipelineId: pipeline.pipeline.id, number, includeRetriedJobs },
        rpcOptions(request),
      );
      return renderOne(res.build, access, pipeline, "single");
    },
  );

  app.post<{ Params: PipelineParams; Body: CreateBuildBody | undefined }>(
    "/v2/organizations/:org/pipelines/:pipeline/builds",
    { schema: { body: createBuildBodySchema, response: response(buildSchema, 201) } },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const body = request.body ?? {};
      const pipeline = await pipelineOf(request, access, "build");
      const creator = creatorOf(request);
      const author =
        body.author && (body.author.name || body.author.email)
          ? { name: body.author.name ?? "", email: body.author.email ?? "" }
          : creator && { name: creator.name, email: creator.email };
      const res = await clients.builds.createBuild(
        {
          pipeline: pipeline.pipeline,
          organizationSlug: access.organization?.slug ?? "",
          creator,
          commit: body.commit ?? "",
          branch: body.branch ?? "",
          message: body.message ?? "",
          author,
          cleanCheckout: body.clean_checkout ?? false,
          env: body.env ?? {},
          metaData: body.meta_data ?? {},
          ignorePipelineBranchFilters: body.ignore_pipeline_branch_filters ?? false,
          pullRequestBaseBranch: body.pull_request_base_branch ?? "",
          pullRequestId:
            body.pull_request_id === undefined || body.pull_request_id === null ? "" : String(body.pull_request_id),
          pullRequestRepository: body.pull_request_repository ?? "",
          source: "api",
        },
        rpcOptions(request),
      );
      return reply.status(201).send(renderOne(res.build, access, pipeline, "single"));
    },
  );

  app.put<{ Params: BuildParams }>(
    "/v2/organizations/:org/pipelines/:pipeline/builds/:number/cancel",
    { schema: { response: response(buildSchema) } },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const number = buildNumber(request.params.number);
      const pipeline = await pipelineOf(request, access, "build");
      const res = await clients.builds.cancelBuild({ pipelineId: pipeline.pipeline.id, number }, rpcOptions(request));
      return renderOne(res.build, access, pipeline, "single");
    },
  );

  app.put<{ Params: BuildParams }>(
    "/v2/organizations/:org/pipelines/:pipeline/builds/:number/rebuild",
    { schema: { response: response(buildSchema) } },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const number = buildNumber(request.params.number);
      const pipeline = await pipelineOf(request, access, "build");
      const res = await clients.builds.rebuildBuild(
        {
          pipeline: pipeline.pipeline,
          organizationSlug: access.organization?.slug ?? "",
          number,
          creator: creatorOf(request),
        },
        rpcOptions(request),
      );
      return renderOne(res.build, access, pipeline, "single");
    },
  );
}
