import type { OrganizationAccess } from "@conveyor/proto/identity";
import { ArchiveFilter, type Pipeline } from "@conveyor/proto/pipelines";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { callerOf, organizationAccess } from "../auth/authenticate.js";
import { isOrganizationAdmin } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import { PipelineSchema, type PipelineView, renderPipeline } from "../render/pipeline.js";
import { pipelineLevelOf } from "../render/team.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { OrgParams, Slug } from "../route-declarations/params.js";
import { linkHeader, pageOf, pagingProperties } from "./paging.js";
import { bodyTeams, bodyToAttributes, PipelineBodySchema } from "./pipeline-body.js";
import type { RouteDeps } from "./route-deps.js";

/** A pipeline by slug (or id) in an organization. */
const PipelineParams = Type.Object({ org: Slug, slug: Slug });
const tags = ["pipelines"];

/**
 * The pipelines routes: list, get, create, update, archive, unarchive and delete. What a caller may see and do is
 * identity's access policy's decision (deps.pipelineAccess): a pipeline they may not read is 404, an edit they may
 * not make is 403.
 */
export function pipelineRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, pipelineAccess } = deps;
  const view = (orgSlug: string, canEdit: boolean): PipelineView => ({ urls: deps.urls, orgSlug, canEdit });
  const orgId = (request: FastifyRequest, slug: string) => organizationAccess(request, slug).organization?.id ?? "";
  const render = (p: Pipeline | undefined, v: PipelineView) => {
    if (!p) throw new HttpError(404, "No pipeline found");
    return renderPipeline(p, v);
  };
  /**
   * Edits need edit access. When the caller may edit every pipeline the service is asked directly; otherwise the
   * pipeline is read first, so one the caller cannot see stays 404 and one they can see but not edit is 403.
   */
  const requireEdit = async (request: FastifyRequest, params: { org: string; slug: string }) => {
    const access = organizationAccess(request, params.org);
    if (access.allPipelines?.edit) return;
    const res = await clients.pipelines.getPipeline({
      organizationId: access.organization?.id ?? "",
      pipeline: params.slug,
    });
    if (!res.pipeline) throw new HttpError(404, "No pipeline found");
    await pipelineAccess.require(request, access, res.pipeline, "edit");
  };
  /** Checks the teams of a create body with identity before anything is created. */
  const checkTeams = async (request: FastifyRequest, access: OrganizationAccess, teams: Record<string, string>) => {
    if (!access.organization?.teamsEnabled || Object.keys(teams).length === 0) return;
    await clients.teams.checkPipelineTeams({
      organizationId: access.organization.id,
      actorId: request.principal?.user?.id ?? "",
      teamIds: Object.keys(teams),
    });
  };
  /** Gives the teams of a create body access to the new pipeline; the pipeline is deleted again if that fails. */
  const linkTeams = async (
    request: FastifyRequest,
    access: OrganizationAccess,
    pipeline: Pipeline,
    teams: Record<string, string>,
  ) => {
    if (Object.keys(teams).length === 0) return;
    const organizationId = access.organization?.id ?? "";
    try {
      await clients.teams.linkPipelineTeams({
        organizationId,
        pipelineId: pipeline.id,
        teams: Object.fromEntries(Object.entries(teams).map(([team, level]) => [team, pipelineLevelOf(level)])),
      });
    } catch (err) {
      await clients.pipelines
        .deletePipeline({ organizationId, pipeline: pipeline.id })
        .catch((cleanup: unknown) => request.log.error({ err: cleanup }, "could not delete an unlinked pipeline"));
      throw err;
    }
  };

  const route = typed(app);

  route.get(
    "/v2/organizations/:org/pipelines",
    {
      config: { scope: "read_pipelines" },
      schema: {
        operationId: "listPipelines",
        summary: "List the pipelines of an organization the caller may read",
        tags,
        params: OrgParams,
        querystring: Type.Object({
          ...pagingProperties,
          archived: Type.Optional(Type.Boolean({ description: "only archived pipelines" })),
          include_archived: Type.Optional(Type.Boolean({ description: "archived pipelines too" })),
        }),
        response: responses(200, Type.Array(PipelineSchema)),
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const paging = pageOf(request.query);
      const visible = access.allPipelines ? undefined : await pipelineAccess.accessible(request, [access]);
      if (visible && visible.pipelines.size === 0) return [];
      const archiveFilter =
        request.query.archived === true
          ? ArchiveFilter.ARCHIVED
          : request.query.include_archived === true
            ? ArchiveFilter.ALL
            : ArchiveFilter.ACTIVE;
      const res = await clients.pipelines.listPipelines({
        organizationId: access.organization?.id ?? "",
        archiveFilter,
        page: paging.page,
        perPage: paging.perPage,
        pipelineIds: visible ? [...visible.pipelines.keys()] : [],
      });
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      const canEdit = (p: Pipeline) => (access.allPipelines ?? visible?.pipelines.get(p.id))?.edit ?? false;
      return res.pipelines.map((p) => renderPipeline(p, view(request.params.org, canEdit(p))));
    },
  );

  route.get(
    "/v2/organizations/:org/pipelines/:slug",
    {
      config: { scope: "read_pipelines" },
      schema: {
        operationId: "getPipeline",
        summary: "Get a pipeline by slug or id",
        tags,
        params: PipelineParams,
        response: responses(200, PipelineSchema),
      },
    },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      const res = await clients.pipelines.getPipeline({
        organizationId: access.organization?.id ?? "",
        pipeline: request.params.slug,
      });
      if (!res.pipeline) throw new HttpError(404, "No pipeline found");
      const granted = await pipelineAccess.require(request, access, res.pipeline, "read");
      return render(res.pipeline, view(request.params.org, granted.edit));
    },
  );

  route.post(
    "/v2/organizations/:org/pipelines",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "createPipeline",
        summary: "Create a pipeline (YAML `configuration` or visual `steps`)",
        tags,
        params: OrgParams,
        body: PipelineBodySchema,
        response: responses(201, PipelineSchema),
      },
    },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const teams = bodyTeams(request.body ?? {});
      await checkTeams(request, access, teams);
      const res = await clients.pipelines.createPipeline({
        organizationId: access.organization?.id ?? "",
        creator: callerOf(request),
        attributes: bodyToAttributes(request.body ?? {}),
        teams,
        teamsEnabled: access.organization?.teamsEnabled ?? false,
        creatorIsAdmin: isOrganizationAdmin(access),
      });
      if (!res.pipeline) throw new HttpError(404, "No pipeline found");
      await linkTeams(request, access, res.pipeline, teams);
      const granted = await pipelineAccess.of(request, access, res.pipeline.id);
      return reply.status(201).send(render(res.pipeline, view(request.params.org, granted.edit)));
    },
  );

  route.patch(
    "/v2/organizations/:org/pipelines/:slug",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "updatePipeline",
        summary: "Update a pipeline: keys present change, null clears",
        tags,
        params: PipelineParams,
        body: PipelineBodySchema,
        response: responses(200, PipelineSchema),
      },
    },
    async (request) => {
      await requireEdit(request, request.params);
      const body = request.body ?? {};
      if (body.teams !== undefined || body.team_uuids !== undefined) {
        throw new HttpError(422, "Validation Failed", {
          message: "Validation Failed",
          errors: [
            {
              field: "teams",
              code: "can't be changed when updating a pipeline; manage pipeline access from the team instead",
            },
          ],
        });
      }
      const res = await clients.pipelines.updatePipeline({
        organizationId: orgId(request, request.params.org),
        pipeline: request.params.slug,
        attributes: bodyToAttributes(body),
      });
      return render(res.pipeline, view(request.params.org, true));
    },
  );

  route.post(
    "/v2/organizations/:org/pipelines/:slug/archive",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "archivePipeline",
        summary: "Archive a pipeline: read-only, hidden from lists",
        tags,
        params: PipelineParams,
        response: responses(200, PipelineSchema),
      },
    },
    async (request) => {
      await requireEdit(request, request.params);
      const res = await clients.pipelines.archivePipeline({
        organizationId: orgId(request, request.params.org),
        pipeline: request.params.slug,
      });
      return render(res.pipeline, view(request.params.org, true));
    },
  );

  route.post(
    "/v2/organizations/:org/pipelines/:slug/unarchive",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "unarchivePipeline",
        summary: "Unarchive a pipeline",
        tags,
        params: PipelineParams,
        response: responses(200, PipelineSchema),
      },
    },
    async (request) => {
      await requireEdit(request, request.params);
      const res = await clients.pipelines.unarchivePipeline({
        organizationId: orgId(request, request.params.org),
        pipeline: request.params.slug,
      });
      return render(res.pipeline, view(request.params.org, true));
    },
  );

  route.delete(
    "/v2/organizations/:org/pipelines/:slug",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "deletePipeline",
        summary: "Delete a pipeline",
        tags,
        params: PipelineParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      await requireEdit(request, request.params);
      await clients.pipelines.deletePipeline({
        organizationId: orgId(request, request.params.org),
        pipeline: request.params.slug,
      });
      return reply.status(204).send();
    },
  );
}
