import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PipelineScheduleAttributesSchema } from "@conveyor/proto/pipelines";
import { type Static, Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { callerOf, organizationAccess } from "../auth/authenticate.js";
import type { PipelineAction } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import { renderSchedule, ScheduleSchema } from "../render/schedule.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, nullableText, Slug, stringMap, text } from "../route-declarations/params.js";
import { linkHeader, pageOf, pagingProperties } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const PipelineParams = Type.Object({ org: Slug, slug: Slug });
const ScheduleParams = Type.Object({ org: Slug, slug: Slug, id: Id });
const tags = ["pipeline schedules"];
/** A string or null, with what it means. */
const described = (max: number, description: string) => Type.Union([text(max, { description }), Type.Null()]);

/**
 * A schedule create or update body, as go-buildkite's CreatePipelineSchedule and UpdatePipelineSchedule send it; the
 * pipelines service judges the values (a blank label or cron line, a cron line it cannot read) and names the field.
 */
const ScheduleBodySchema = Type.Object({
  label: Type.Optional(nullableText(BOUNDS.name)),
  cronline: Type.Optional(
    described(
      BOUNDS.name,
      "@hourly, @daily (@midnight), @weekly, @monthly, @yearly, or five cron fields and an optional zone",
    ),
  ),
  message: Type.Optional(nullableText(BOUNDS.text)),
  commit: Type.Optional(described(BOUNDS.ref, "default HEAD")),
  branch: Type.Optional(described(BOUNDS.ref, "default: the pipeline's default branch")),
  env: Type.Optional(Type.Union([stringMap(), Type.Null()])),
  enabled: Type.Optional(Type.Boolean({ description: "default true" })),
});
type ScheduleBody = Static<typeof ScheduleBodySchema>;

/** The attributes a body sets; null is the attribute's empty value, which the service reads as its default. */
function bodyToAttributes(body: ScheduleBody): MessageInitShape<typeof PipelineScheduleAttributesSchema> {
  const str = (v: string | null | undefined) => (v === undefined ? undefined : (v ?? ""));
  return {
    label: str(body.label),
    cronline: str(body.cronline),
    message: str(body.message),
    commit: str(body.commit),
    branch: str(body.branch),
    env: body.env === undefined ? undefined : { values: body.env ?? {} },
    enabled: body.enabled,
  };
}

/**
 * The pipeline schedule routes (docs/compatibility.md#pipeline-schedules): list, get, create, update (PATCH, as
 * go-buildkite sends it) and delete. Reading takes read access to the pipeline, changing takes edit access.
 */
export function scheduleRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, pipelineAccess } = deps;
  /** The pipeline a route names, when the caller may take `action` on it, and how to render its schedules. */
  const pipelineFor = async (
    request: FastifyRequest,
    params: { org: string; slug: string },
    action: PipelineAction,
  ) => {
    const access = organizationAccess(request, params.org);
    const found = await pipelineAccess.pipeline(request, access, params.slug, action);
    return {
      access,
      pipeline: found.pipeline,
      organizationId: access.organization?.id ?? "",
      view: { urls: deps.urls, orgSlug: params.org, canEdit: found.canEdit },
    };
  };
  const route = typed(app);

  route.get(
    "/v2/organizations/:org/pipelines/:slug/schedules",
    {
      config: { scope: "read_pipelines" },
      schema: {
        operationId: "listPipelineSchedules",
        summary: "List a pipeline's schedules, oldest first",
        tags,
        params: PipelineParams,
        querystring: Type.Object(pagingProperties),
        response: responses(200, Type.Array(ScheduleSchema)),
      },
    },
    async (request, reply) => {
      const { pipeline, organizationId, view } = await pipelineFor(request, request.params, "read");
      const paging = pageOf(request.query);
      const res = await clients.pipelines.listPipelineSchedules({
        organizationId,
        pipeline: pipeline.id,
        page: paging.page,
        perPage: paging.perPage,
      });
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      return res.schedules.map((s) => renderSchedule(s, pipeline, view));
    },
  );

  route.get(
    "/v2/organizations/:org/pipelines/:slug/schedules/:id",
    {
      config: { scope: "read_pipelines" },
      schema: {
        operationId: "getPipelineSchedule",
        summary: "Get a pipeline schedule",
        tags,
        params: ScheduleParams,
        response: responses(200, ScheduleSchema),
      },
    },
    async (request) => {
      const { pipeline, organizationId, view } = await pipelineFor(request, request.params, "read");
      const res = await clients.pipelines.getPipelineSchedule({
        organizationId,
        pipeline: pipeline.id,
        id: request.params.id,
      });
      if (!res.schedule) throw new HttpError(404, "No pipeline schedule found");
      return renderSchedule(res.schedule, pipeline, view);
    },
  );

  route.post(
    "/v2/organizations/:org/pipelines/:slug/schedules",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "createPipelineSchedule",
        summary: "Create a pipeline schedule: builds on a cron line",
        tags,
        params: PipelineParams,
        body: ScheduleBodySchema,
        response: responses(201, ScheduleSchema),
      },
    },
    async (request, reply) => {
      const { pipeline, organizationId, view } = await pipelineFor(request, request.params, "edit");
      const res = await clients.pipelines.createPipelineSchedule({
        organizationId,
        organizationSlug: request.params.org,
        pipeline: pipeline.id,
        creator: callerOf(request),
        attributes: bodyToAttributes(request.body ?? {}),
      });
      if (!res.schedule) throw new HttpError(404, "No pipeline schedule found");
      return reply.status(201).send(renderSchedule(res.schedule, pipeline, view));
    },
  );

  route.patch(
    "/v2/organizations/:org/pipelines/:slug/schedules/:id",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "updatePipelineSchedule",
        summary: "Update a pipeline schedule: keys present change",
        tags,
        params: ScheduleParams,
        body: ScheduleBodySchema,
        response: responses(200, ScheduleSchema),
      },
    },
    async (request) => {
      const { pipeline, organizationId, view } = await pipelineFor(request, request.params, "edit");
      const res = await clients.pipelines.updatePipelineSchedule({
        organizationId,
        pipeline: pipeline.id,
        id: request.params.id,
        attributes: bodyToAttributes(request.body ?? {}),
      });
      if (!res.schedule) throw new HttpError(404, "No pipeline schedule found");
      return renderSchedule(res.schedule, pipeline, view);
    },
  );

  route.delete(
    "/v2/organizations/:org/pipelines/:slug/schedules/:id",
    {
      config: { scope: "write_pipelines" },
      schema: {
        operationId: "deletePipelineSchedule",
        summary: "Delete a pipeline schedule",
        tags,
        params: ScheduleParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const { pipeline, organizationId } = await pipelineFor(request, request.params, "edit");
      await clients.pipelines.deletePipelineSchedule({ organizationId, pipeline: pipeline.id, id: request.params.id });
      return reply.status(204).send();
    },
  );
}
