import type { JsonObject } from "@bufbuild/protobuf";
import { renderRestStep, restStepSchema } from "@conveyor/ci-rules";
import type { Creator, Pipeline } from "@conveyor/proto/pipelines";
import { isoTime } from "@conveyor/runtime";
import { arrayOf, bool, int, nullableStr, nullableTimestamp, object, str, timestamp } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { userSchema } from "./user.js";

/** What rendering a pipeline needs beyond the record: where URLs point and whether the caller may see secrets. */
export interface PipelineView {
  urls: Urls;
  orgSlug: string;
  /** Callers with edit permission see provider.webhook_url; others get "". */
  canEdit: boolean;
}

function renderCreator(c: Creator | undefined) {
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
export function renderPipelineSummary(p: Pipeline, view: PipelineView) {
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
    created_at: isoTime(p.createdAt),
    archived_at: isoTime(p.archivedAt),
    scheduled_builds_count: p.counts?.scheduledBuilds ?? 0,
    running_builds_count: p.counts?.runningBuilds ?? 0,
    scheduled_jobs_count: p.counts?.scheduledJobs ?? 0,
    running_jobs_count: p.counts?.runningJobs ?? 0,
    waiting_jobs_count: p.counts?.waitingJobs ?? 0,
  };
}

/** The full REST Pipeline object. */
export function renderPipeline(p: Pipeline, view: PipelineView) {
  return {
    ...renderPipelineSummary(p, view),
    pipeline_template_uuid: p.pipelineTemplateUuid ?? null,
    branch_configuration: p.branchConfiguration ?? null,
    default_branch: p.defaultBranch,
    skip_queued_branch_builds: p.skipQueuedBranchBuilds,
    skip_queued_branch_builds_filter: p.skipQueuedBranchBuildsFilter ?? null,
    cancel_running_branch_builds: p.cancelRunningBranchBuilds,
    cancel_running_branch_builds_filter: p.cancelRunningBranchBuildsFilter ?? null,
    allow_rebuilds: p.allowRebuilds,
    created_by: renderCreator(p.createdBy),
    env: p.env,
    configuration: p.configuration,
    // biome-ignore lint/suspicious/noExplicitAny: stored steps are PipelineStep objects carried as JSON.
    steps: p.steps.map((s) => renderRestStep(s as any)),
  };
}

const providerSchema = object({
  id: str,
  webhook_url: str,
  settings: { type: "object", additionalProperties: true },
});

const summaryProperties = {
  id: str,
  graphql_id: str,
  url: str,
  web_url: str,
  name: str,
  description: nullableStr,
  slug: str,
  repository: str,
  cluster_id: nullableStr,
  provider: providerSchema,
  builds_url: str,
  badge_url: str,
  visibility: str,
  tags: { type: ["array", "null"], items: str },
  created_at: timestamp,
  archived_at: nullableTimestamp,
  scheduled_builds_count: int,
  running_builds_count: int,
  scheduled_jobs_count: int,
  running_jobs_count: int,
  waiting_jobs_count: int,
};

export const pipelineSummarySchema = object(summaryProperties);

export const pipelineSchema = object({
  ...summaryProperties,
  pipeline_template_uuid: nullableStr,
  branch_configuration: nullableStr,
  default_branch: str,
  skip_queued_branch_builds: bool,
  skip_queued_branch_builds_filter: nullableStr,
  cancel_running_branch_builds: bool,
  cancel_running_branch_builds_filter: nullableStr,
  allow_rebuilds: bool,
  created_by: userSchema,
  env: { type: "object", additionalProperties: str },
  configuration: str,
  steps: arrayOf(restStepSchema),
});
