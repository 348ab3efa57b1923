import { Code, ConnectError } from "@connectrpc/connect";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { RuleSchema, renderRule } from "../render/rule.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, OrgParams, Slug, text } from "../route-declarations/params.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const RuleParams = Type.Object({ org: Slug, rule: Id });

const pipelineRef = Type.Optional(text(BOUNDS.slug, { description: "a pipeline UUID or slug" }));

/**
 * A create-rule body: its type, and a value naming the source and target as the type needs them, as go-buildkite
 * and the docs spell them (`source_pipeline`) or as Buildkite's reference does (`source_pipeline_uuid`; docs/compatibility.md#rules). Rules answer every
 * problem with a reason (422 `{message}`), so identity judges presence and the type's name.
 */
export const CreateRuleBodySchema = Type.Object({
  type: Type.Optional(text(BOUNDS.name, { description: "e.g. pipeline.trigger_build.pipeline" })),
  value: Type.Optional(
    Type.Object({
      source_pipeline: pipelineRef,
      target_pipeline: pipelineRef,
      source_pipeline_uuid: pipelineRef,
      target_pipeline_uuid: pipelineRef,
      conditions: Type.Optional(Type.Array(text(BOUNDS.ref), { maxItems: 100 })),
    }),
  ),
});

const tags = ["rules"];

/**
 * The pipeline reference of one side ("source" or "target") of a rule value: `<side>_pipeline` (UUID or slug, as
 * go-buildkite and the docs send it) or `<side>_pipeline_uuid` (as Buildkite's reference spells it).
 */
function pipelineReference(value: unknown, side: "source" | "target"): string {
  if (typeof value !== "object" || value === null) return "";
  const v = value as Record<string, unknown>;
  const ref = v[`${side}_pipeline`] ?? v[`${side}_pipeline_uuid`];
  return typeof ref === "string" ? ref.trim() : "";
}

function conditionsOf(value: unknown): string[] {
  const conditions = typeof value === "object" && value !== null ? (value as Record<string, unknown>).conditions : [];
  return Array.isArray(conditions) ? conditions.filter((c): c is string => typeof c === "string") : [];
}

/** The rules routes: list, get, create and delete. Identity stores rules; pipelines are resolved here first. */
export function ruleRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const orgId = (request: FastifyRequest, slug: string) => organizationAccess(request, slug).organization?.id ?? "";

  /**
   * The UUID of the pipeline one side of a rule names, when the rule type has a pipeline on that side: pipelines
   * belong to the pipelines service, and only one of the same organization will do (else 422 with the reason).
   * "" when nothing is named, which identity reports with the rule's other problems.
   */
  const resolveSide = async (
    organizationId: string,
    type: string,
    value: unknown,
    side: "source" | "target",
  ): Promise<string> => {
    const parts = type.split(".");
    if (parts.length !== 3 || parts[side === "source" ? 0 : 2] !== "pipeline") return "";
    const ref = pipelineReference(value, side);
    if (ref === "") return "";
    try {
      const res = await clients.pipelines.getPipeline({ organizationId, pipeline: ref });
      return res.pipeline?.id ?? "";
    } catch (err) {
      if (ConnectError.from(err).code !== Code.NotFound) throw err;
      const Side = side === "source" ? "Source" : "Target";
      throw new HttpError(422, `${Side} pipeline ${ref} could not be found in this organization`);
    }
  };

  const route = typed(app);

  route.get(
    "/v2/organizations/:org/rules",
    {
      config: { scope: "read_rules" },
      schema: {
        operationId: "listRules",
        summary: "List an organization's rules",
        tags,
        params: OrgParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(RuleSchema)),
      },
    },
    async (request, reply) => {
      const paging = pageOf(request.query);
      const res = await clients.rules.listRules({
        organizationId: orgId(request, request.params.org),
        page: paging.page,
        perPage: paging.perPage,
      });
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      return res.rules.map((r) => renderRule(r, urls, request.params.org));
    },
  );

  route.get(
    "/v2/organizations/:org/rules/:rule",
    {
      config: { scope: "read_rules" },
      schema: {
        operationId: "getRule",
        summary: "Get a rule",
        tags,
        params: RuleParams,
        response: responses(200, RuleSchema),
      },
    },
    async (request) => {
      const res = await clients.rules.getRule({
        organizationId: orgId(request, request.params.org),
        id: request.params.rule,
      });
      if (!res.rule) throw new HttpError(404, "No rule found");
      return renderRule(res.rule, urls, request.params.org);
    },
  );

  route.post(
    "/v2/organizations/:org/rules",
    {
      config: { scope: "write_rules", bodyErrors: "sentence" },
      schema: {
        operationId: "createRule",
        summary: "Create a rule",
        tags,
        params: OrgParams,
        body: CreateRuleBodySchema,
        response: responses(201, RuleSchema),
      },
    },
    async (request, reply) => {
      const organizationId = orgId(request, request.params.org);
      const body = typeof request.body === "object" && request.body !== null ? request.body : {};
      const type = typeof body.type === "string" ? body.type.trim() : "";
      const sourceId = await resolveSide(organizationId, type, body.value, "source");
      const targetId = await resolveSide(organizationId, type, body.value, "target");
      const res = await clients.rules.createRule({
        organizationId,
        actorId: request.principal?.user?.id ?? "",
        type,
        sourceId,
        targetId,
        conditions: conditionsOf(body.value),
      });
      if (!res.rule) throw new HttpError(404, "No rule found");
      return reply.status(201).send(renderRule(res.rule, urls, request.params.org));
    },
  );

  route.delete(
    "/v2/organizations/:org/rules/:rule",
    {
      config: { scope: "write_rules" },
      schema: { operationId: "deleteRule", summary: "Delete a rule", tags, params: RuleParams, response: noContent },
    },
    async (request, reply) => {
      await clients.rules.deleteRule({
        organizationId: orgId(request, request.params.org),
        actorId: request.principal?.user?.id ?? "",
        id: request.params.rule,
      });
      return reply.status(204).send();
    },
  );
}
