import type { Build } from "@conveyor/proto/builds";
import type { OrganizationAccess } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { contentVersion } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { inputsOf, pipelineVersion } from "../answer-cache/answer-cache.js";
import { callerOf, organizationAccess } from "../auth/authenticate.js";
import type { AccessiblePipelines, PipelineAction } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import { BuildSchema, renderBuild } from "../render/build.js";
import type { JobDetail } from "../render/job.js";
import { conditionalResponses, responses, typed } from "../route-declarations/declare.js";
import {
  BOUNDS,
  BuildParams,
  nullableText,
  OrgParams,
  PipelineParams,
  stringMap,
  text,
} from "../route-declarations/params.js";
import { BuildListQuerySchema, parseBuildListQuery, type RawQuery } from "./build-query.js";
import { linkHeader, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const nullableFlag = Type.Union([Type.Boolean(), Type.Null()]);

/**
 * The body of a create-build request (docs/compatibility.md#builds), with its types and bounds; the builds service judges
 * presence and values.
 */
export const CreateBuildBodySchema = Type.Object({
  commit: Type.Optional(text(BOUNDS.ref, { description: "ref, SHA or tag to build (required)" })),
  branch: Type.Optional(text(BOUNDS.ref, { description: "the branch the commit belongs to (required)" })),
  message: Type.Optional(nullableText(BOUNDS.text)),
  author: Type.Optional(
    Type.Union([
      Type.Object({
        name: Type.Optional(nullableText(BOUNDS.name)),
        email: Type.Optional(nullableText(BOUNDS.name)),
        username: Type.Optional(nullableText(BOUNDS.name)),
      }),
      Type.Null(),
    ]),
  ),
  clean_checkout: Type.Optional(nullableFlag),
  env: Type.Optional(Type.Union([stringMap(), Type.Null()])),
  ignore_pipeline_branch_filters: Type.Optional(nullableFlag),
  meta_data: Type.Optional(Type.Union([stringMap(), Type.Null()])),
  pull_request_base_branch: Type.Optional(nullableText(BOUNDS.ref)),
  // A number beyond 2^53 cannot be told from its neighbours once parsed: it is refused, not rounded.
  pull_request_id: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()]),
  ),
  pull_request_repository: Type.Optional(nullableText(BOUNDS.ref)),
  pull_request_labels: Type.Optional(
    Type.Union([Type.Array(text(BOUNDS.name), { maxItems: BOUNDS.entries }), Type.Null()], {
      description: "the pull request's labels (the builds service takes at most 100)",
    }),
  ),
});

const tags = ["builds"];

const NO_BUILD = () => new HttpError(404, "No build found");

/**
 * The builds routes: the three lists (all organizations, one organization, one pipeline), get, create, cancel and
 * rebuild. Each maps the request to one builds RPC; lists add at most one pipelines lookup per page.
 */
export function buildRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;

  /** The pipeline of a build route, when the caller may take `action` on it (404 unseen, 403 not allowed). */
  const pipelineOf = (
    request: FastifyRequest & { params: { pipeline: string } },
    access: OrganizationAccess,
    action: PipelineAction,
  ) => deps.pipelineAccess.pipeline(request, access, request.params.pipeline, action);

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

  /** What the caller's access shows of an organization-wide page: who may edit which pipelines. */
  const editFingerprint = (visible: AccessiblePipelines) =>
    contentVersion(
      [...visible.everywhere].map(([id, a]) => `${id}:${a.edit}`).join(","),
      [...visible.pipelines].map(([id, a]) => `${id}:${a.edit}`).join(","),
    );

  /** The versions of the pipelines a page embeds ("-" for one that is gone). */
  const pipelineVersions = (ids: readonly string[], pipelines: ReadonlyMap<string, Pipeline>) =>
    ids.map((id) => {
      const p = pipelines.get(id);
      return p ? pipelineVersion(p) : "-";
    });

  /**
   * Serves one page of builds among `accesses` (optionally of one known pipeline). The embedded pipelines of an
   * organization-wide page come from one batch lookup, unless exclude_pipeline asks for none. Organization-wide
   * pages cover only the pipelines the caller may read.
   */
  const listPage = async (
    request: FastifyRequest & { query: RawQuery },
    reply: FastifyReply,
    accesses: OrganizationAccess[],
    known?: { pipeline: Pipeline; canEdit: boolean },
  ) => {
    const pipeline = known?.pipeline;
    const paging = pageOf(request.query as { page?: number; per_page?: number });
    const query = parseBuildListQuery(request.query);
    const orgs = new Map(accesses.flatMap((a) => (a.organization ? [[a.organization.id, a] as const] : [])));
    if (orgs.size === 0) return [];
    const visible = known ? undefined : await deps.pipelineAccess.accessible(request, [...orgs.values()]);
    if (visible && visible.everywhere.size === 0 && visible.pipelines.size === 0) return [];
    const canEdit = (build: Build) =>
      known
        ? known.canEdit
        : ((visible?.everywhere.get(build.organizationId) ?? visible?.pipelines.get(build.pipelineId))?.edit ?? false);
    const list = {
      ...query.filters,
      organizationIds: visible ? [...visible.everywhere.keys()] : [...orgs.keys()],
      pipelineIds: visible ? [...visible.pipelines.keys()] : [],
      pipelineId: pipeline?.id ?? "",
      page: paging.page,
      perPage: paging.perPage,
    };
    /** The embedded pipelines of an organization-wide page, in one batch. */
    const lookUp = async (organizationIds: string[], ids: string[]) => {
      const found = new Map<string, Pipeline>();
      const batch = await clients.pipelines.batchGetPipelines({ organizationIds, ids });
      for (const p of batch.pipelines) found.set(p.id, p);
      return found;
    };
    return deps.answers.serve(request, reply, {
      key: contentVersion(
        "builds",
        request.url,
        JSON.stringify(list, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
      ),
      inputs: inputsOf([
        ...[...orgs.values()].map((a) => a.organization?.slug ?? ""),
        query.excludePipeline,
        pipeline ? pipelineVersion(pipeline) : "",
        known ? known.canEdit : visible ? editFingerprint(visible) : "",
      ]),
      fetch: async (ifNoneMatch) => {
        const res = await clients.builds.listBuilds({ ...list, ifNoneMatch });
        return { version: res.version, notModified: res.notModified, value: res };
      },
      confirm: async (depends) => {
        if (!depends) return true;
        const d = depends as { organizationIds: string[]; ids: string[]; versions: string[] };
        const now = pipelineVersions(d.ids, await lookUp(d.organizationIds, d.ids));
        return now.join(",") === d.versions.join(",");
      },
      render: async (res) => {
        const builds = res?.builds ?? [];
        const link = linkHeader(deps.publicUrl, request.url, paging, { hasMore: res?.hasMore ?? false });
        let pipelines = new Map<string, Pipeline>();
        let depends: { organizationIds: string[]; ids: string[]; versions: string[] } | undefined;
        if (pipeline) pipelines.set(pipeline.id, pipeline);
        else if (!query.excludePipeline && builds.length > 0) {
          const ids = [...new Set(builds.map((b) => b.pipelineId))];
          const organizationIds = [...new Set(builds.map((b) => b.organizationId))];
          pipelines = await lookUp(organizationIds, ids);
          depends = { organizationIds, ids, versions: pipelineVersions(ids, pipelines) };
        }
        const body = builds.flatMap((build) => {
          const access = orgs.get(build.organizationId);
          if (!access?.organization) return [];
          // A deleted pipeline's builds go with it (the builds service removes them on its event; until then,
          // unlisted).
          if (!query.excludePipeline && !pipelines.has(build.pipelineId)) return [];
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
        return { body, ...(link ? { link } : {}), depends };
      },
    });
  };

  const route = typed(app);
  const list = { querystring: BuildListQuerySchema, response: conditionalResponses(200, Type.Array(BuildSchema)) };

  route.get(
    "/v2/builds",
    {
      config: { scope: "read_builds" },
      schema: {
        operationId: "listAllBuilds",
        summary: "List builds across the organizations the token may reach, newest first",
        tags,
        ...list,
      },
    },
    async (request, reply) => listPage(request, reply, request.principal?.organizations ?? []),
  );

  route.get(
    "/v2/organizations/:org/builds",
    {
      config: { scope: "read_builds" },
      schema: {
        operationId: "listOrganizationBuilds",
        summary: "List the builds of an organization's pipelines, newest first",
        tags,
        params: OrgParams,
        ...list,
      },
    },
    async (request, reply) => listPage(request, reply, [organizationAccess(request, request.params.org)]),
  );

  route.get(
    "/v2/organizations/:org/pipelines/:pipeline/builds",
    {
      config: { scope: "read_builds" },
      schema: {
        operationId: "listPipelineBuilds",
        summary: "List the builds of a pipeline, newest first",
        tags,
        params: PipelineParams,
        ...list,
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const pipeline = await pipelineOf(request, access, "read");
      return listPage(request, reply, [access], pipeline);
    },
  );

  route.get(
    "/v2/organizations/:org/pipelines/:pipeline/builds/:number",
    {
      config: { scope: "read_builds" },
      schema: {
        operationId: "getBuild",
        summary: "Get a build by number",
        tags,
        params: BuildParams,
        querystring: Type.Object({
          include_retried_jobs: Type.Optional(Type.Boolean({ description: "list every retried job" })),
        }),
        response: conditionalResponses(200, BuildSchema),
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const number = request.params.number;
      const includeRetriedJobs = request.query.include_retried_jobs ?? false;
      const pipeline = await pipelineOf(request, access, "read");
      const pipelineId = pipeline.pipeline.id;
      return deps.answers.serve(request, reply, {
        key: `build|${pipelineId}|${number}|${includeRetriedJobs}`,
        inputs: inputsOf([access.organization?.slug ?? "", pipelineVersion(pipeline.pipeline), pipeline.canEdit]),
        fetch: async (ifNoneMatch) => {
          const res = await clients.builds.getBuild({ pipelineId, number, includeRetriedJobs, ifNoneMatch });
          return { version: res.version, notModified: res.notModified, value: res.build };
        },
        render: (build) => ({ body: renderOne(build, access, pipeline, "single") }),
      });
    },
  );

  route.post(
    "/v2/organizations/:org/pipelines/:pipeline/builds",
    {
      config: { scope: "write_builds" },
      schema: {
        operationId: "createBuild",
        summary: "Create a build",
        tags,
        params: PipelineParams,
        body: CreateBuildBodySchema,
        response: responses(201, BuildSchema),
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const body = request.body ?? {};
      const pipeline = await pipelineOf(request, access, "build");
      const creator = callerOf(request);
      const author =
        body.author && (body.author.name || body.author.email)
          ? { name: body.author.name ?? "", email: body.author.email ?? "" }
          : creator && { name: creator.name, email: creator.email };
      const res = await clients.builds.createBuild({
        // By id: the builds service keeps the pipelines it builds, so the request does not carry the steps.
        pipelineId: pipeline.pipeline.id,
        organizationId: pipeline.pipeline.organizationId,
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
        pullRequestLabels: body.pull_request_labels ?? [],
        source: "api",
      });
      return reply.status(201).send(renderOne(res.build, access, pipeline, "single"));
    },
  );

  route.put(
    "/v2/organizations/:org/pipelines/:pipeline/builds/:number/cancel",
    {
      config: { scope: "write_builds" },
      schema: {
        operationId: "cancelBuild",
        summary: "Cancel a scheduled, running or failing build",
        tags,
        params: BuildParams,
        response: responses(200, BuildSchema),
      },
    },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const number = request.params.number;
      const pipeline = await pipelineOf(request, access, "build");
      const res = await clients.builds.cancelBuild({ pipelineId: pipeline.pipeline.id, number });
      return renderOne(res.build, access, pipeline, "single");
    },
  );

  route.put(
    "/v2/organizations/:org/pipelines/:pipeline/builds/:number/rebuild",
    {
      config: { scope: "write_builds" },
      schema: {
        operationId: "rebuildBuild",
        summary: "Rebuild a build: a new build of the same commit",
        tags,
        params: BuildParams,
        response: responses(200, BuildSchema),
      },
    },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const number = request.params.number;
      const pipeline = await pipelineOf(request, access, "build");
      const res = await clients.builds.rebuildBuild({
        pipeline: pipeline.pipeline,
        organizationSlug: access.organization?.slug ?? "",
        number,
        creator: callerOf(request),
      });
      return renderOne(res.build, access, pipeline, "single");
    },
  );
}
