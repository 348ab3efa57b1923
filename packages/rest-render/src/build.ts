import type { Build } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { type BuildUrls, type JobDetail, JobSchema, renderJob } from "./job.js";
import { PipelineSummarySchema, renderPipelineSummary } from "./pipeline.js";
import { Bool, Int, Nullable, NullableStr, NullableTimestamp, Str, StringMap } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { NullableUserSchema, renderBuildUser } from "./user.js";

/** What rendering a build needs beyond the record. */
export interface BuildView {
  urls: Urls;
  /** The slug of the build's organization. */
  orgSlug: string;
  /**
   * The build's pipeline as it is now, rendered as the smaller embedded pipeline. `null` leaves the `pipeline` key
   * out (exclude_pipeline, or a pipeline that is gone); its slug is then the one the build recorded.
   */
  pipeline: Pipeline | null;
  /** Whether the caller may edit the pipeline (provider.webhook_url). */
  canEdit: boolean;
  /** How much of each job's agent to show. */
  detail: JobDetail;
}

/** The API URL of build `number` of a pipeline. */
export function buildApiUrl(urls: Urls, orgSlug: string, pipelineSlug: string, number: number): string {
  return urls.api(`organizations/${orgSlug}/pipelines/${pipelineSlug}/builds/${number}`);
}

/**
 * The REST Build object with the JSON types go-buildkite decodes (docs/compatibility.md#go-buildkite): `meta_data` string → string, `pull_request.id` a string,
 * `rebuilt_from` `{id, number, url}` or null, timestamps ISO with milliseconds or null. Jobs are left out when the
 * service returned none because they were excluded.
 */
export function renderBuild(build: Build, view: BuildView, opts: { excludeJobs?: boolean } = {}): BuildBody {
  const pipelineSlug = view.pipeline?.slug || build.pipelineSlug;
  const api = buildApiUrl(view.urls, view.orgSlug, pipelineSlug, build.number);
  const web = view.urls.web(`${view.orgSlug}/${pipelineSlug}/builds/${build.number}`);
  const buildUrls: BuildUrls = { urls: view.urls, orgSlug: view.orgSlug, api, web };
  const author = build.author && (build.author.name || build.author.email) ? build.author : undefined;
  const pr = build.pullRequest;
  const rendered: BuildBody = {
    id: build.id,
    graphql_id: graphqlId("Build", build.id),
    url: api,
    web_url: web,
    number: build.number,
    state: build.state,
    cancel_reason: build.cancelReason === "" ? null : build.cancelReason,
    blocked: build.blocked,
    message: build.message,
    commit: build.commit,
    branch: build.branch,
    env: build.env,
    source: build.source,
    creator: renderBuildUser(build.creator),
    author: author ? { name: author.name, email: author.email } : null,
    created_at: isoTime(build.createdAt),
    scheduled_at: isoTime(build.scheduledAt),
    started_at: isoTime(build.startedAt),
    finished_at: isoTime(build.finishedAt),
    meta_data: build.metaData,
    pull_request:
      pr && (pr.id || pr.base || pr.repository) ? { id: pr.id, base: pr.base, repository: pr.repository } : null,
    rebuilt_from: build.rebuiltFrom?.id
      ? {
          id: build.rebuiltFrom.id,
          number: build.rebuiltFrom.number,
          url: buildApiUrl(view.urls, view.orgSlug, pipelineSlug, build.rebuiltFrom.number),
        }
      : null,
    triggered_from: build.triggeredFrom?.buildId
      ? {
          build_id: build.triggeredFrom.buildId,
          build_number: build.triggeredFrom.buildNumber,
          build_pipeline_slug: build.triggeredFrom.pipelineSlug,
        }
      : null,
  };
  if (view.pipeline) {
    rendered.pipeline = renderPipelineSummary(view.pipeline, {
      urls: view.urls,
      orgSlug: view.orgSlug,
      canEdit: view.canEdit,
    });
  }
  if (!opts.excludeJobs) rendered.jobs = build.jobs.map((job) => renderJob(job, buildUrls, view.detail));
  return rendered;
}

/** The REST Build; `pipeline` and `jobs` are absent when the request excluded them. */
export const BuildSchema = Type.Object({
  id: Str,
  graphql_id: Str,
  url: Str,
  web_url: Str,
  number: Int,
  state: Str,
  cancel_reason: NullableStr,
  blocked: Bool,
  message: Str,
  commit: Str,
  branch: Str,
  env: StringMap,
  source: Str,
  creator: NullableUserSchema,
  author: Nullable(Type.Object({ name: Str, email: Str })),
  created_at: NullableTimestamp,
  scheduled_at: NullableTimestamp,
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp,
  meta_data: StringMap,
  pull_request: Nullable(Type.Object({ id: Str, base: Str, repository: Str })),
  rebuilt_from: Nullable(Type.Object({ id: Str, number: Int, url: Str })),
  triggered_from: Nullable(Type.Object({ build_id: Str, build_number: Int, build_pipeline_slug: Str })),
  pipeline: Type.Optional(PipelineSummarySchema),
  jobs: Type.Optional(Type.Array(JobSchema)),
});
export type BuildBody = Static<typeof BuildSchema>;
