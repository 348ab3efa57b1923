import { ArchiveFilter, type Pipeline } from "@conveyor/proto/pipelines";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { canEditPipelines, isOrganizationAdmin } from "../auth/pipeline-permissions.js";
import { HttpError } from "../http-error.js";
import { linkHeader, pagingQuerySchema, parsePaging } from "../paging.js";
import { type PipelineView, pipelineSchema, renderPipeline } from "../render/pipeline.js";
import { arrayOf, errorSchema } from "../render/schemas.js";
import { type RouteDeps, rpcOptions } from "./deps.js";
import { bodyTeams, bodyToAttributes, type PipelineBody, pipelineBodySchema } from "./pipeline-body.js";

type OrgParams = { org: string };
type PipelineParams = { org: string; slug: string };

const FORBIDDEN = () => new HttpError(403, "Forbidden");

/** The pipelines routes: list, get, create, update, archive, unarchive and delete. */
export function pipelineRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const view = (request: FastifyRequest, orgSlug: string): PipelineView => ({
    urls: deps.urls,
    orgSlug,
    canEdit: canEditPipelines(organizationAccess(request, orgSlug)),
  });
  const orgId = (request: FastifyRequest, slug: string) => organizationAccess(request, slug).organization?.id ?? "";
  const render = (p: Pipeline | undefined, v: PipelineView) => {
    if (!p) throw new HttpError(404, "No pipeline found");
    return renderPipeline(p, v);
  };
  /** Edits need edit permission; the pipeline must be visible first, so a hidden one stays 404. */
  const requireEdit = async (request: FastifyRequest<{ Params: PipelineParams }>) => {
    const access = organizationAccess(request, request.params.org);
    if (canEditPipelines(access)) return;
    await deps.clients.pipelines.getPipeline(
      { organizationId: access.organization?.id ?? "", pipeline: request.params.slug },
      rpcOptions(request),
    );
    throw FORBIDDEN();
  };

  const response = (ok: object, okStatus = 200) => ({ [okStatus]: ok, "4xx": errorSchema });

  app.get<{
    Params: OrgParams;
    Querystring: { page?: string; per_page?: string; archived?: string; include_archived?: string };
  }>(
    "/v2/organizations/:org/pipelines",
    {
      schema: {
        querystring: {
          type: "object",
          properties: { ...pagingQuerySchema, archived: { type: "string" }, include_archived: { type: "string" } },
        },
        response: response(arrayOf(pipelineSchema)),
      },
    },
    async (request, reply) => {
      const paging = parsePaging(request.query);
      const archiveFilter =
        request.query.archived === "true"
          ? ArchiveFilter.ARCHIVED
          : request.query.include_archived === "true"
            ? ArchiveFilter.ALL
            : ArchiveFilter.ACTIVE;
      const res = await deps.clients.pipelines.listPipelines(
        {
          organizationId: orgId(request, request.params.org),
          archiveFilter,
          page: paging.page,
          perPage: paging.perPage,
        },
        rpcOptions(request),
      );
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      const v = view(request, request.params.org);
      return res.pipelines.map((p) => renderPipeline(p, v));
    },
  );

  app.get<{ Params: PipelineParams }>(
    "/v2/organizations/:org/pipelines/:slug",
    { schema: { response: response(pipelineSchema) } },
    async (request) => {
      const res = await deps.clients.pipelines.getPipeline(
        { organizationId: orgId(request, request.params.org), pipeline: request.params.slug },
        rpcOptions(request),
      );
      return render(res.pipeline, view(request, request.params.org));
    },
  );

  app.post<{ Params: OrgParams; Body: PipelineBody }>(
    "/v2/organizations/:org/pipelines",
    { schema: { body: pipelineBodySchema, response: response(pipelineSchema, 201) } },
    async (request, reply) => {
      const access = organizationAccess(request, request.params.org);
      const user = request.principal?.user;
      const res = await deps.clients.pipelines.createPipeline(
        {
          organizationId: access.organization?.id ?? "",
          creator: user && {
            id: user.id,
            name: user.name,
            email: user.email,
            avatarUrl: user.avatarUrl,
            createdAt: user.createdAt,
          },
          attributes: bodyToAttributes(request.body ?? {}),
          teams: bodyTeams(request.body ?? {}),
          teamsEnabled: access.organization?.teamsEnabled ?? false,
          creatorIsAdmin: isOrganizationAdmin(access),
        },
        rpcOptions(request),
      );
      return reply.status(201).send(render(res.pipeline, view(request, request.params.org)));
    },
  );

  app.patch<{ Params: PipelineParams; Body: PipelineBody }>(
    "/v2/organizations/:org/pipelines/:slug",
    { schema: { body: pipelineBodySchema, response: response(pipelineSchema) } },
    async (request) => {
      await requireEdit(request);
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
      const res = await deps.clients.pipelines.updatePipeline(
        {
          organizationId: orgId(request, request.params.org),
          pipeline: request.params.slug,
          attributes: bodyToAttributes(body),
        },
        rpcOptions(request),
      );
      return render(res.pipeline, view(request, request.params.org));
    },
  );

  app.post<{ Params: PipelineParams }>(
    "/v2/organizations/:org/pipelines/:slug/archive",
    { schema: { response: response(pipelineSchema) } },
    async (request) => {
      await requireEdit(request);
      const res = await deps.clients.pipelines.archivePipeline(
        { organizationId: orgId(request, request.params.org), pipeline: request.params.slug },
        rpcOptions(request),
      );
      return render(res.pipeline, view(request, request.params.org));
    },
  );

  app.post<{ Params: PipelineParams }>(
    "/v2/organizations/:org/pipelines/:slug/unarchive",
    { schema: { response: response(pipelineSchema) } },
    async (request) => {
      await requireEdit(request);
      const res = await deps.clients.pipelines.unarchivePipeline(
        { organizationId: orgId(request, request.params.org), pipeline: request.params.slug },
        rpcOptions(request),
      );
      return render(res.pipeline, view(request, request.params.org));
    },
  );

  app.delete<{ Params: PipelineParams }>(
    "/v2/organizations/:org/pipelines/:slug",
    { schema: { response: { "4xx": errorSchema } } },
    async (request, reply) => {
      await requireEdit(request);
      await deps.clients.pipelines.deletePipeline(
        { organizationId: orgId(request, request.params.org), pipeline: request.params.slug },
        rpcOptions(request),
      );
      return reply.status(204).send();
    },
  );
}
