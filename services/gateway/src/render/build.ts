import type { Build, BuildUser } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { isoTime } from "@conveyor/runtime";
import { type BuildUrls, type JobDetail, jobSchema, renderJob } from "./job.js";
import { pipelineSummarySchema, renderPipelineSummary } from "./pipeline.js";
import { arrayOf, bool, int, nullableStr, nullableTimestamp, str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { userSchema } from "./user.js";

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

function renderBuildUser(u: BuildUser | undefined) {
  if (!u?.id) return null;
  return {
    id: u.id,
    graphql_id: graphqlId("User", u.id),
    name: u.name,
    email: u.email,
    avatar_url: u.avatarUrl === "" ? null : u.avatarUrl,
    created_at: isoTime(u.createdAt),
  };
}

/**
 * The REST Build object with §D's JSON types: `meta_data` string → string, `pull_request.id` a string,
 * `rebuilt_from` `{id, number, url}` or null, timestamps ISO with milliseconds or null. Jobs are left out when the
 * service returned none because they were excluded.
 */
export function renderBuild(build: Build, view: BuildView, opts: { excludeJobs?: boolean } = {}) {
  const pipelineSlug = view.pipeline?.slug || build.pipelineSlug;
  const api = buildApiUrl(view.urls, view.orgSlug, pipelineSlug, build.number);
  const web = view.urls.web(`${view.orgSlug}/${pipelineSlug}/builds/${build.number}`);
  const buildUrls: BuildUrls = { urls: view.urls, orgSlug: view.orgSlug, api, web };
  const author = build.author && (build.author.name || build.author.email) ? build.author : undefined;
  const pr = build.pullRequest;
  const rendered: Record<string, unknown> = {
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

const stringMap = { type: "object", additionalProperties: str } as const;

const buildProperties = {
  id: str,
  graphql_id: str,
  url: str,
  web_url: str,
  number: int,
  state: str,
  cancel_reason: nullableStr,
  blocked: bool,
  message: str,
  commit: str,
  branch: str,
  env: stringMap,
  source: str,
  creator: { ...userSchema, type: ["object", "null"] },
  author: { type: ["object", "null"], properties: { name: str, email: str }, required: ["name", "email"] },
  created_at: nullableTimestamp,
  scheduled_at: nullableTimestamp,
  started_at: nullableTimestamp,
  finished_at: nullableTimestamp,
  meta_data: stringMap,
  pull_request: {
    type: ["object", "null"],
    properties: { id: str, base: str, repository: str },
    required: ["id", "base", "repository"],
  },
  rebuilt_from: {
    type: ["object", "null"],
    properties: { id: str, number: int, url: str },
    required: ["id", "number", "url"],
  },
};

/** The REST Build; `pipeline` and `jobs` are absent when the request excluded them. */
export const buildSchema = {
  type: "object",
  properties: {
    ...buildProperties,
    pipeline: pipelineSummarySchema,
    jobs: arrayOf(jobSchema),
  },
  required: Object.keys(buildProperties),
} as const;
