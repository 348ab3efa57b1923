import type { JsonObject } from "@bufbuild/protobuf";
import { type RestStep, renderRestStep, restStepSchema } from "@conveyor/ci-rules";
import type { Creator, Pipeline } from "@conveyor/proto/pipelines";
import { isoTime, stepFromMessage } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import {
  Bool,
  Int,
  Nullable,
  NullableInt,
  NullableStr,
  NullableTimestamp,
  Str,
  StringMap,
  Timestamp,
} from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { UserSchema } from "./user.js";

/** What rendering a pipeline needs beyond the record: where URLs point and whether the caller may see secrets. */
export interface PipelineView {
  urls: Urls;
  orgSlug: string;
  /**
   * Callers with edit permission see provider.webhook_url (others get "") and, in the full pipeline, the webhook
   * secret as provider.settings.webhook_secret (docs/webhooks.md#the-webhook-secret).
   */
  canEdit: boolean;
}

/** A pipeline's or a schedule's `created_by`: the creator recorded with it. */
export function renderCreator(c: Creator | undefined) {
  return {
    id: c?.id ?? "",
    graphql_id: graphqlId("User", c?.id ?? ""),
    name: c?.name ?? "",
    email: c?.email ?? "",
    avatar_url: c?.avatarUrl ? c.avatarUrl : null,
    created_at: isoTime(c?.createdAt),
  };
}

function renderProvider(p: Pipeline, view: PipelineView) {
  const token = p.provider?.webhookToken ?? "";
  return {
    id: p.provider?.id ?? "git",
    webhook_url: view.canEdit && token ? view.urls.webhook(token) : "",
    settings: (p.provider?.settings ?? {}) as JsonObject,
  };
}

/** The smaller pipeline object embedded in builds. */
export function renderPipelineSummary(p: Pipeline, view: PipelineView): PipelineSummaryBody {
  const url = view.urls.api(`organizations/${view.orgSlug}/pipelines/${p.slug}`);
  return {
    id: p.id,
    graphql_id: graphqlId("Pipeline", p.id),
    url,
    web_url: view.urls.web(`${view.orgSlug}/${p.slug}`),
    name: p.name,
    description: p.description ?? null,
    slug: p.slug,
    repository: p.repository,
    cluster_id: p.clusterId ?? null,
    provider: renderProvider(p, view),
    builds_url: `${url}/builds`,
    badge_url: view.urls.badge(p.badgeToken),
    visibility: p.visibility,
    tags: p.tags ? p.tags.values : null,
    // Every pipeline has its creation time; the old serializer wrote a missing one as "".
    created_at: isoTime(p.createdAt) ?? "",
    archived_at: isoTime(p.archivedAt),
    scheduled_builds_count: p.counts?.scheduledBuilds ?? 0,
    running_builds_count: p.counts?.runningBuilds ?? 0,
    scheduled_jobs_count: p.counts?.scheduledJobs ?? 0,
    running_jobs_count: p.counts?.runningJobs ?? 0,
    waiting_jobs_count: p.counts?.waitingJobs ?? 0,
  };
}

/** The full REST Pipeline object. */
export function renderPipeline(p: Pipeline, view: PipelineView): PipelineBody {
  const summary = renderPipelineSummary(p, view);
  const secret = p.provider?.webhookSecret ?? "";
  return {
    ...summary,
    // Only the pipeline itself shows its webhook secret, and only to those who may edit it: not the pipelines
    // embedded in builds.
    provider:
      view.canEdit && secret !== ""
        ? { ...summary.provider, settings: { ...summary.provider.settings, webhook_secret: secret } }
        : summary.provider,
    pipeline_template_uuid: p.pipelineTemplateUuid ?? null,
    branch_configuration: p.branchConfiguration ?? null,
    default_branch: p.defaultBranch,
    skip_queued_branch_builds: p.skipQueuedBranchBuilds,
    skip_queued_branch_builds_filter: p.skipQueuedBranchBuildsFilter ?? null,
    cancel_running_branch_builds: p.cancelRunningBranchBuilds,
    cancel_running_branch_builds_filter: p.cancelRunningBranchBuildsFilter ?? null,
    allow_rebuilds: p.allowRebuilds,
    default_command_step_timeout: p.defaultCommandStepTimeout ?? null,
    maximum_command_step_timeout: p.maximumCommandStepTimeout ?? null,
    created_by: renderCreator(p.createdBy),
    env: p.env,
    configuration: p.configuration,
    steps: p.steps.map((s) => renderRestStep(stepFromMessage(s))),
  };
}

const ProviderSchema = Type.Object({
  id: Str,
  webhook_url: Str,
  settings: Type.Record(Type.String(), Type.Unknown()),
});

const summaryProperties = {
  id: Str,
  graphql_id: Str,
  url: Str,
  web_url: Str,
  name: Str,
  description: NullableStr,
  slug: Str,
  repository: Str,
  cluster_id: NullableStr,
  provider: ProviderSchema,
  builds_url: Str,
  badge_url: Str,
  visibility: Str,
  tags: Nullable(Type.Array(Str)),
  created_at: Timestamp,
  archived_at: NullableTimestamp,
  scheduled_builds_count: Int,
  running_builds_count: Int,
  scheduled_jobs_count: Int,
  running_jobs_count: Int,
  waiting_jobs_count: Int,
};

/** The smaller pipeline embedded in builds. */
export const PipelineSummarySchema = Type.Object(summaryProperties);
export type PipelineSummaryBody = Static<typeof PipelineSummarySchema>;

/** One element of `steps` (@conveyor/ci-rules declares its JSON schema beside the renderer). */
const RestStepSchema = Type.Unsafe<RestStep>(restStepSchema);

/** The full REST Pipeline. */
export const PipelineSchema = Type.Object({
  ...summaryProperties,
  pipeline_template_uuid: NullableStr,
  branch_configuration: NullableStr,
  default_branch: Str,
  skip_queued_branch_builds: Bool,
  skip_queued_branch_builds_filter: NullableStr,
  cancel_running_branch_builds: Bool,
  cancel_running_branch_builds_filter: NullableStr,
  allow_rebuilds: Bool,
  default_command_step_timeout: NullableInt,
  maximum_command_step_timeout: NullableInt,
  created_by: UserSchema,
  env: StringMap,
  configuration: Str,
  steps: Type.Array(RestStepSchema),
});
export type PipelineBody = Static<typeof PipelineSchema>;
