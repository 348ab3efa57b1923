/**
 * The one declaration of a build's shape in the builds service; the repository keeps its storage form private and
 * the proto Build and REST Build are views of it.
 */
import type { NotifyRule } from "@conveyor/ci-rules";
import type { BuildContext, BuildState } from "./types.js";

/** A user as builds record them (creator), at creation. */
export interface UserSnapshot {
  id: string;
  name: string;
  email: string;
  avatarUrl: string | null;
  createdAt: Date | null;
}

/** What a build keeps of its pipeline and organization at creation, for its jobs' environment. */
export interface PipelineSnapshot {
  name: string;
  repository: string;
  defaultBranch: string;
  /** The provider id (github, gitlab, bitbucket, git…). */
  providerId: string;
  /** The pipeline's env, then the YAML's top-level env over it. */
  env: Record<string, string>;
  organizationSlug: string;
  /** The pipeline's command step timeouts in minutes (default for steps without one, and the cap on all). */
  timeouts: { default: number | null; maximum: number | null };
}

/** The trigger job that created a build, and its build. */
export interface TriggeredFrom {
  buildId: string;
  buildNumber: number;
  pipelineId: string;
  pipelineSlug: string;
  jobId: string;
}

/** A build's pull request, as the forge (or the REST client) described it when the build was made. */
export interface BuildPullRequest {
  /** Its number, as a string. */
  id: string;
  base: string;
  repository: string;
  labels: string[];
  /** Null when the forge did not say (and for builds created over REST). */
  draft: boolean | null;
  /** Whether it comes from another repository; null when not known. */
  fork: boolean | null;
}

/** A stored build (its jobs are stored apart). */
export interface Build {
  id: string;
  organizationId: string;
  pipelineId: string;
  pipelineSlug: string;
  pipeline: PipelineSnapshot;
  number: number;
  state: BuildState;
  blocked: boolean;
  cancelRequested: boolean;
  cancelReason: string | null;
  message: string;
  commit: string;
  branch: string;
  env: Record<string, string>;
  metaData: Record<string, string>;
  source: string;
  creator: UserSnapshot | null;
  author: { name: string; email: string } | null;
  pullRequest: BuildPullRequest | null;
  /** The tag a tag push built (BUILDKITE_TAG); null otherwise. */
  tag: string | null;
  /** The forge event and action a webhook build came from (build.source_event, build.source_action); else null. */
  sourceEvent: string | null;
  sourceAction: string | null;
  rebuiltFrom: { id: string; number: number } | null;
  triggeredFrom: TriggeredFrom | null;
  cleanCheckout: boolean;
  createdAt: Date;
  scheduledAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Incremented by every update: the compare-and-set guard. */
  version: number;
  /** The marks of its latest announced writes (events/state-events.ts); absent on builds stored before them. */
  eventMarks?: string[];
  /** The build-level `notify:` of each pipeline uploaded into it, by upload id (jobs/uploaded-notify.ts). */
  notifyUploads?: Array<{ id: string; rules: NotifyRule[] }>;
}

/** What conditionals (`if:`) of a build's steps read: the build, its pipeline and organization. */
export function conditionContext(
  b: Pick<
    Build,
    | "id"
    | "number"
    | "branch"
    | "commit"
    | "message"
    | "source"
    | "sourceEvent"
    | "sourceAction"
    | "tag"
    | "env"
    | "pullRequest"
    | "creator"
    | "author"
    | "pipelineId"
    | "pipelineSlug"
    | "organizationId"
  > & { pipeline: Pick<PipelineSnapshot, "defaultBranch" | "organizationSlug"> },
): BuildContext {
  return {
    id: b.id,
    number: b.number,
    branch: b.branch,
    commit: b.commit,
    message: b.message,
    source: b.source,
    sourceEvent: b.sourceEvent,
    sourceAction: b.sourceAction,
    tag: b.tag,
    env: b.env,
    pullRequest: b.pullRequest
      ? {
          id: b.pullRequest.id,
          baseBranch: b.pullRequest.base || null,
          draft: b.pullRequest.draft,
          labels: b.pullRequest.labels,
          repository: b.pullRequest.repository || null,
          fork: b.pullRequest.fork,
        }
      : null,
    creator: b.creator && { id: b.creator.id, name: b.creator.name, email: b.creator.email },
    author: b.author,
    pipeline: { slug: b.pipelineSlug, defaultBranch: b.pipeline.defaultBranch, id: b.pipelineId },
    organization: { slug: b.pipeline.organizationSlug, id: b.organizationId },
  };
}
