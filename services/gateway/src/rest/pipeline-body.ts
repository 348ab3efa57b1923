import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { PipelineAttributesSchema } from "@conveyor/proto/pipelines";
import { type Static, Type } from "@fastify/type-provider-typebox";
import { HttpError } from "../errors/http-error.js";
import { BOUNDS, MAX_INT32, nullableText, text } from "../route-declarations/params.js";

const minutes = Type.Union([Type.Integer({ minimum: 0, maximum: MAX_INT32 }), Type.Null()]);
/** An object the pipelines service reads key by key and reports on (env names, provider settings). */
const looseObject = Type.Union([
  Type.Record(Type.String(), Type.Unknown(), {
    maxProperties: BOUNDS.entries,
    propertyNames: { maxLength: BOUNDS.key },
  }),
  Type.Null(),
]);

/**
 * A pipeline create or update body (docs/compatibility.md#pipelines), with its types and bounds; the pipelines service judges the
 * values (required keys, names, env names, YAML).
 */
export const PipelineBodySchema = Type.Object({
  name: Type.Optional(text(BOUNDS.name)),
  slug: Type.Optional(nullableText(BOUNDS.slug)),
  description: Type.Optional(nullableText(BOUNDS.text)),
  repository: Type.Optional(text(BOUNDS.ref)),
  cluster_id: Type.Optional(nullableText(BOUNDS.id)),
  pipeline_template_uuid: Type.Optional(nullableText(BOUNDS.id)),
  branch_configuration: Type.Optional(nullableText(BOUNDS.ref)),
  default_branch: Type.Optional(nullableText(BOUNDS.ref)),
  skip_queued_branch_builds: Type.Optional(Type.Boolean()),
  skip_queued_branch_builds_filter: Type.Optional(nullableText(BOUNDS.ref)),
  cancel_running_branch_builds: Type.Optional(Type.Boolean()),
  cancel_running_branch_builds_filter: Type.Optional(nullableText(BOUNDS.ref)),
  allow_rebuilds: Type.Optional(Type.Boolean()),
  default_timeout_in_minutes: Type.Optional(minutes),
  maximum_timeout_in_minutes: Type.Optional(minutes),
  env: Type.Optional(looseObject),
  provider_settings: Type.Optional(looseObject),
  tags: Type.Optional(Type.Union([Type.Array(text(BOUNDS.name), { maxItems: BOUNDS.entries }), Type.Null()])),
  visibility: Type.Optional(text(BOUNDS.name, { description: "private (default) or public" })),
  configuration: Type.Optional(text(BOUNDS.yaml, { description: "the pipeline's steps as YAML" })),
  steps: Type.Optional(
    Type.Array(Type.Unknown(), { maxItems: BOUNDS.entries, description: "the visual form's steps" }),
  ),
  teams: Type.Optional(
    Type.Record(Type.String(), text(BOUNDS.name), {
      maxProperties: BOUNDS.entries,
      propertyNames: { maxLength: BOUNDS.id },
      description: "team UUID → read_only, build_and_read or manage_build_and_read (create only)",
    }),
  ),
  team_uuids: Type.Optional(Type.Array(text(BOUNDS.id), { maxItems: BOUNDS.entries, deprecated: true })),
});

export type PipelineRequestBody = Static<typeof PipelineBodySchema>;

/** The team access level the deprecated `team_uuids` form grants. */
export const TEAM_UUIDS_ACCESS_LEVEL = "manage_build_and_read";

/**
 * How deep the free-form objects (env, provider_settings, steps) may nest. They travel as protobuf Structs, whose
 * every level is two messages deep, and a protobuf reader stops at 100 levels: a deeper object failed in the
 * gateway or the pipelines service as a 500. 32 levels is far beyond any real pipeline's.
 */
export const MAX_NESTING = 32;

/** Whether a parsed JSON value nests deeper than `limit` objects and arrays (stops looking past the limit). */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit === 0) return true;
  return Object.values(value).some((v) => nestsDeeperThan(v, limit - 1));
}

/**
 * The provider settings of a body apart from `webhook_secret`, which the pipelines service keeps apart from the
 * settings (and shows only to those who may edit the pipeline): a string sets it, null or "" removes it.
 */
function splitWebhookSecret(given: PipelineRequestBody["provider_settings"]): {
  settings: JsonObject | undefined;
  webhookSecret: string | undefined;
} {
  if (given === undefined) return { settings: undefined, webhookSecret: undefined };
  const { webhook_secret: secret, ...settings } = given ?? {};
  if (secret !== undefined && secret !== null && typeof secret !== "string") {
    throw new HttpError(422, "Validation Failed", {
      message: "Validation Failed",
      errors: [{ field: "provider_settings.webhook_secret", code: "must be a string" }],
    });
  }
  const hasSecret = given !== null && Object.hasOwn(given, "webhook_secret");
  return { settings: settings as JsonObject, webhookSecret: hasSecret ? (secret ?? "") : undefined };
}

/**
 * Maps a request body to the service's attributes: only keys present in the body are set, and null becomes the
 * empty value that clears an attribute. A free-form object nested deeper than MAX_NESTING is a 422.
 */
export function bodyToAttributes(body: PipelineRequestBody): MessageInitShape<typeof PipelineAttributesSchema> {
  const deep = (["env", "provider_settings", "steps"] as const).filter((f) => nestsDeeperThan(body[f], MAX_NESTING));
  if (deep.length > 0) {
    throw new HttpError(422, "Validation Failed", {
      message: "Validation Failed",
      errors: deep.map((field) => ({ field, code: `nests deeper than ${MAX_NESTING} levels` })),
    });
  }
  const str = (v: string | null | undefined) => (v === undefined ? undefined : (v ?? ""));
  const { settings, webhookSecret } = splitWebhookSecret(body.provider_settings);
  const attrs: MessageInitShape<typeof PipelineAttributesSchema> = {
    name: body.name,
    slug: str(body.slug),
    description: str(body.description),
    repository: body.repository,
    clusterId: str(body.cluster_id),
    pipelineTemplateUuid: str(body.pipeline_template_uuid),
    branchConfiguration: str(body.branch_configuration),
    defaultBranch: str(body.default_branch),
    skipQueuedBranchBuilds: body.skip_queued_branch_builds,
    skipQueuedBranchBuildsFilter: str(body.skip_queued_branch_builds_filter),
    cancelRunningBranchBuilds: body.cancel_running_branch_builds,
    cancelRunningBranchBuildsFilter: str(body.cancel_running_branch_builds_filter),
    allowRebuilds: body.allow_rebuilds,
    defaultTimeoutInMinutes:
      body.default_timeout_in_minutes === undefined ? undefined : (body.default_timeout_in_minutes ?? 0),
    maximumTimeoutInMinutes:
      body.maximum_timeout_in_minutes === undefined ? undefined : (body.maximum_timeout_in_minutes ?? 0),
    env: body.env === undefined ? undefined : ((body.env ?? {}) as JsonObject),
    providerSettings: settings,
    webhookSecret,
    tags: body.tags === undefined ? undefined : { values: body.tags ?? [] },
    visibility: body.visibility,
    configuration: body.configuration,
    visual: body.steps === undefined ? undefined : ({ steps: body.steps } as JsonObject),
  };
  for (const key of Object.keys(attrs) as Array<keyof typeof attrs>) {
    if (attrs[key] === undefined) delete attrs[key];
  }
  return attrs;
}

/** The teams of a create body: `teams`, or the deprecated `team_uuids` with full access. */
export function bodyTeams(body: PipelineRequestBody): Record<string, string> {
  if (body.teams) return body.teams;
  return Object.fromEntries((body.team_uuids ?? []).map((uuid) => [uuid, TEAM_UUIDS_ACCESS_LEVEL]));
}
