import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { PipelineAttributesSchema } from "@conveyor/proto/pipelines";

const nullableString = { type: ["string", "null"] } as const;

/** The JSON schema of a pipeline create or update body: types only; the pipelines service judges the values. */
export const pipelineBodySchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    slug: nullableString,
    description: nullableString,
    repository: { type: "string" },
    cluster_id: nullableString,
    pipeline_template_uuid: nullableString,
    branch_configuration: nullableString,
    default_branch: nullableString,
    skip_queued_branch_builds: { type: "boolean" },
    skip_queued_branch_builds_filter: nullableString,
    cancel_running_branch_builds: { type: "boolean" },
    cancel_running_branch_builds_filter: nullableString,
    allow_rebuilds: { type: "boolean" },
    env: { type: ["object", "null"] },
    provider_settings: { type: ["object", "null"] },
    tags: { type: ["array", "null"], items: { type: "string" } },
    visibility: { type: "string" },
    configuration: { type: "string" },
    steps: { type: "array" },
    teams: { type: "object", additionalProperties: { type: "string" } },
    team_uuids: { type: "array", items: { type: "string" } },
  },
} as const;

export interface PipelineBody {
  name?: string;
  slug?: string | null;
  description?: string | null;
  repository?: string;
  cluster_id?: string | null;
  pipeline_template_uuid?: string | null;
  branch_configuration?: string | null;
  default_branch?: string | null;
  skip_queued_branch_builds?: boolean;
  skip_queued_branch_builds_filter?: string | null;
  cancel_running_branch_builds?: boolean;
  cancel_running_branch_builds_filter?: string | null;
  allow_rebuilds?: boolean;
  env?: JsonObject | null;
  provider_settings?: JsonObject | null;
  tags?: string[] | null;
  visibility?: string;
  configuration?: string;
  steps?: unknown[];
  teams?: Record<string, string>;
  team_uuids?: string[];
}

/** The team access level the deprecated `team_uuids` form grants. */
export const TEAM_UUIDS_ACCESS_LEVEL = "manage_build_and_read";

/**
 * Maps a request body to the service's attributes: only keys present in the body are set, and null becomes the
 * empty value that clears an attribute.
 */
export function bodyToAttributes(body: PipelineBody): MessageInitShape<typeof PipelineAttributesSchema> {
  const str = (v: string | null | undefined) => (v === undefined ? undefined : (v ?? ""));
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
    env: body.env === undefined ? undefined : (body.env ?? {}),
    providerSettings: body.provider_settings === undefined ? undefined : (body.provider_settings ?? {}),
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
export function bodyTeams(body: PipelineBody): Record<string, string> {
  if (body.teams) return body.teams;
  return Object.fromEntries((body.team_uuids ?? []).map((uuid) => [uuid, TEAM_UUIDS_ACCESS_LEVEL]));
}
