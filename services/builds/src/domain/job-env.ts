/**
 * The environment an agent runs a job with (docs/compatibility.md#the-job-object): the variables the bootstrap
 * requires, those Buildkite documents, and the user's env from the pipeline, the build and the step. Pure.
 */
import type { Build } from "./build.js";
import type { Job } from "./job.js";
import { pluginsEnvironment } from "./plugins-env.js";

/**
 * Every variable of a job's environment, all strings. The user's env is laid down first (pipeline < YAML top-level
 * < build < step, each overriding the one before); the BUILDKITE_* variables the service sets go on top, so a
 * step cannot make the agent check out another repository or report as another job. Variables that have no value
 * for this job (a tag, a pull request) are left out, except those the bootstrap reads as "absent" values
 * (`BUILDKITE_PULL_REQUEST=false`, `BUILDKITE_TIMEOUT=false`).
 */
export function jobEnvironment(build: Build, job: Job): Record<string, string> {
  const env: Record<string, string> = {
    ...build.pipeline.env,
    ...build.env,
    ...job.env,
  };
  const pipelineProvider = build.pipeline.providerId || "git";
  const set: Record<string, string | null | undefined> = {
    CI: "true",
    BUILDKITE: "true",
    BUILDKITE_ORGANIZATION_ID: build.organizationId,
    BUILDKITE_ORGANIZATION_SLUG: build.pipeline.organizationSlug,
    BUILDKITE_PIPELINE_ID: build.pipelineId,
    BUILDKITE_PIPELINE_SLUG: build.pipelineSlug,
    BUILDKITE_PIPELINE_NAME: build.pipeline.name,
    BUILDKITE_PIPELINE_DEFAULT_BRANCH: build.pipeline.defaultBranch,
    BUILDKITE_PIPELINE_PROVIDER: pipelineProvider,
    BUILDKITE_PROJECT_SLUG: `${build.pipeline.organizationSlug}/${build.pipelineSlug}`,
    BUILDKITE_PROJECT_PROVIDER: pipelineProvider,
    BUILDKITE_REPO: build.pipeline.repository,
    BUILDKITE_REPO_SSH_HOST: sshHost(build.pipeline.repository),
    BUILDKITE_COMMIT: build.commit,
    BUILDKITE_BRANCH: build.branch,
    BUILDKITE_TAG: build.tag,
    BUILDKITE_MESSAGE: build.message,
    BUILDKITE_BUILD_ID: build.id,
    BUILDKITE_BUILD_NUMBER: String(build.number),
    BUILDKITE_BUILD_CREATOR: build.creator?.name,
    BUILDKITE_BUILD_CREATOR_EMAIL: build.creator?.email,
    BUILDKITE_BUILD_AUTHOR: build.author?.name,
    BUILDKITE_BUILD_AUTHOR_EMAIL: build.author?.email,
    BUILDKITE_SOURCE: build.source,
    BUILDKITE_CLEAN_CHECKOUT: build.cleanCheckout ? "true" : null,
    BUILDKITE_PULL_REQUEST: build.pullRequest?.id || "false",
    BUILDKITE_PULL_REQUEST_BASE_BRANCH: build.pullRequest?.base || (build.pullRequest ? "" : null),
    BUILDKITE_PULL_REQUEST_REPO: build.pullRequest?.repository || (build.pullRequest ? "" : null),
    BUILDKITE_PULL_REQUEST_LABELS: build.pullRequest ? build.pullRequest.labels.join(",") : null,
    BUILDKITE_PULL_REQUEST_DRAFT:
      build.pullRequest && build.pullRequest.draft !== null ? String(build.pullRequest.draft) : null,
    BUILDKITE_REBUILT_FROM_BUILD_ID: build.rebuiltFrom?.id,
    BUILDKITE_REBUILT_FROM_BUILD_NUMBER: build.rebuiltFrom ? String(build.rebuiltFrom.number) : null,
    BUILDKITE_TRIGGERED_FROM_BUILD_ID: build.triggeredFrom?.buildId,
    BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: build.triggeredFrom ? String(build.triggeredFrom.buildNumber) : null,
    BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: build.triggeredFrom?.pipelineSlug,
    BUILDKITE_JOB_ID: job.id,
    BUILDKITE_STEP_ID: job.stepId,
    BUILDKITE_STEP_KEY: job.stepKey,
    BUILDKITE_LABEL: job.label,
    BUILDKITE_COMMAND: job.command ?? "",
    BUILDKITE_ARTIFACT_PATHS: job.artifactPaths ?? "",
    BUILDKITE_TIMEOUT: job.timeoutInMinutes === null ? "false" : String(job.timeoutInMinutes),
    BUILDKITE_RETRY_COUNT: String(job.retriesCount),
    BUILDKITE_PARALLEL_JOB: job.parallelGroupIndex === null ? null : String(job.parallelGroupIndex),
    BUILDKITE_PARALLEL_JOB_COUNT: job.parallelGroupTotal === null ? null : String(job.parallelGroupTotal),
    BUILDKITE_CONCURRENCY_GROUP: job.concurrencyGroup,
    BUILDKITE_CONCURRENCY_LIMIT: job.concurrency === null ? null : String(job.concurrency),
    BUILDKITE_PLUGINS: pluginsOf(job),
    BUILDKITE_AGENT_ID: job.agent?.id,
    BUILDKITE_AGENT_NAME: job.agent?.name,
  };
  for (const [name, value] of Object.entries(set)) {
    if (value !== null && value !== undefined) env[name] = value;
  }
  for (const tag of job.agent?.metaData ?? []) {
    const eq = tag.indexOf("=");
    if (eq <= 0) continue;
    env[`BUILDKITE_AGENT_META_DATA_${tagVariable(tag.slice(0, eq))}`] = tag.slice(eq + 1);
  }
  return env;
}

/** An agent tag's name as an environment variable suffix: upper case, anything but letters and digits as `_`. */
export function tagVariable(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/** The host of an SSH or HTTPS repository URL (git@github.com:a/b.git → github.com); null for local paths. */
export function sshHost(repository: string): string | null {
  const scp = /^[\w.-]+@([\w.-]+):/.exec(repository);
  if (scp) return scp[1] ?? null;
  try {
    const url = new URL(repository);
    return url.protocol === "file:" || url.hostname === "" ? null : url.hostname;
  } catch {
    return null;
  }
}

function pluginsOf(job: Job): string | null {
  return job.step.type === "script" ? pluginsEnvironment(job.step.plugins) : null;
}
