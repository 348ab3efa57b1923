/**
 * Which builds a webhook event makes, as a pipeline's provider settings say (docs/webhooks.md#what-builds): one
 * build, the cancellation of a deleted branch's builds, or nothing with the reason, which the delivery's answer and
 * the logs show. Pure: what it needs to know of stored builds and pull requests (WebhookFacts) the caller looks up
 * first, as lookupsFor says.
 *
 * - `trigger_mode` none builds nothing; code builds pushes and pull requests, deployment GitHub deployments and
 *   fork GitHub forks.
 * - A branch push builds with `build_branches` when the branch passes the pipeline's `branch_configuration`. When a
 *   pull request from that branch of the pipeline's repository is open (and `build_pull_requests`), the push builds
 *   as the pull request's build instead, held to the pull request filters rather than the branch filter.
 * - A tag push builds with `build_tags` (branch and tag are both the tag's name); the branch filter applies.
 * - A deleted branch cancels its unfinished builds with `cancel_deleted_branch_builds`.
 * - A pull request builds with `build_pull_requests` when opened or reopened; on new commits (`synchronize`) only
 *   from a fork (the push event builds those of the pipeline's repository); when ready for review with
 *   `build_pull_request_ready_for_review`; when its labels change with `build_pull_request_labels_changed`. A fork's
 *   needs `build_pull_request_forks`, and its branch is `owner:branch` with `prefix_pull_request_fork_branch_names`.
 *   `pull_request_branch_filter_configuration` (when enabled) filters the head branch; the pipeline's branch filter
 *   does not apply.
 * - A skip marker in the commit message or the pull request's title builds nothing (skip-markers.ts).
 * - `filter_condition` (when `filter_enabled`) must be true of the build.
 * - `skip_builds_for_existing_commits`: a commit the pipeline built on any branch is not built again;
 *   `skip_pull_request_builds_for_existing_commits`: a pull request's commit built on its branch is not built again
 *   when the pull request is opened, reopened or synchronized.
 */
import { matchesBranchFilter } from "../branch-filter.js";
import type { BuildContext } from "../conditionals/build-context.js";
import { evaluateCondition } from "../conditionals/conditionals.js";
import type { WebhookSettings } from "./provider-settings.js";
import { skipMarkerIn } from "./skip-markers.js";
import {
  actionName,
  type DeploymentEvent,
  type ForkEvent,
  type PullRequestEvent,
  type PushEvent,
  sourceOf,
  type WebhookEvent,
  type WebhookPerson,
} from "./webhook-event.js";

/** The pipeline a delivery came for, as the rules read it. */
export interface WebhookPipeline {
  id: string;
  slug: string;
  defaultBranch: string;
  branchConfiguration: string | null;
  organization: { id: string; slug: string };
  settings: WebhookSettings;
}

/** A pull request the receiver remembers as open: what a push to its branch attaches to the push's build. */
export interface OpenPullRequest {
  number: string;
  baseBranch: string;
  /** The head repository's URL. */
  repository: string;
  labels: string[];
  draft: boolean | null;
}

/** What the rules need to know beyond the event and the pipeline, looked up as lookupsFor says. */
export interface WebhookFacts {
  /** The branches on which the pipeline has builds of the event's commit already. */
  commitBuiltOn: readonly string[];
  /** For a branch push: the open pull request whose head is that branch of the pipeline's repository. */
  openPullRequest: OpenPullRequest | null;
}

/** The pull request data a webhook build carries. */
export interface WebhookPullRequest {
  id: string;
  base: string;
  repository: string;
  labels: string[];
  draft: boolean | null;
  fork: boolean;
}

/** A build a webhook event makes. */
export interface WebhookBuild {
  commit: string;
  branch: string;
  message: string;
  author: WebhookPerson | null;
  /** The tag a tag push builds, else null. */
  tag: string | null;
  pullRequest: WebhookPullRequest | null;
  /** build.source_event and build.source_action. */
  source: { event: string; action: string };
  /** Variables the build's jobs get (a deployment's). */
  env: Record<string, string>;
}

/** What an event comes to. */
export type WebhookDecision =
  | { kind: "build"; build: WebhookBuild }
  | { kind: "cancel"; branch: string; reason: string }
  | { kind: "nothing"; reason: string };

/** What to look up for `event`: builds of which commit, and the open pull request of which pushed branch. */
export function lookupsFor(event: WebhookEvent): { commit: string | null; pullRequestBranch: string | null } {
  switch (event.kind) {
    case "push":
      return {
        commit: event.head?.sha ?? null,
        pullRequestBranch: event.ref.type === "branch" && !event.deleted ? event.ref.name : null,
      };
    case "pull_request":
      return { commit: event.head.sha, pullRequestBranch: null };
    case "deployment":
      return { commit: event.sha, pullRequestBranch: null };
    case "fork":
      return { commit: null, pullRequestBranch: null };
  }
}

/** The events each trigger mode builds. */
const MODE_EVENTS: Record<WebhookSettings["triggerMode"], ReadonlyArray<WebhookEvent["kind"]>> = {
  code: ["push", "pull_request"],
  deployment: ["deployment"],
  fork: ["fork"],
  none: [],
};

const nothing = (reason: string): WebhookDecision => ({ kind: "nothing", reason });

/** What `event` comes to for `pipeline`, given the facts looked up for it. */
export function decideWebhookEvent(
  event: WebhookEvent,
  pipeline: WebhookPipeline,
  facts: WebhookFacts,
): WebhookDecision {
  const mode = pipeline.settings.triggerMode;
  if (mode === "none") return nothing("The pipeline's trigger_mode is none: no webhook creates builds.");
  if (!MODE_EVENTS[mode].includes(event.kind)) {
    return nothing(`${event.kind} events create no builds: the pipeline's trigger_mode is ${mode}.`);
  }
  switch (event.kind) {
    case "push":
      return pushDecision(event, pipeline, facts);
    case "pull_request":
      return pullRequestDecision(event, pipeline, facts);
    case "deployment":
      return admit(deploymentBuild(event), pipeline, facts, { skipTexts: [], anyBranch: false, sameBranch: false });
    case "fork":
      return admit(forkBuild(event), pipeline, facts, { skipTexts: [], anyBranch: false, sameBranch: false });
  }
}

function pushDecision(event: PushEvent, pipeline: WebhookPipeline, facts: WebhookFacts): WebhookDecision {
  const { settings } = pipeline;
  const { name, type } = event.ref;
  if (event.deleted || !event.head) {
    if (type === "tag") return nothing(`Tag "${name}" was deleted: there is nothing to build or cancel.`);
    if (!settings.cancelDeletedBranchBuilds) {
      return nothing(`Branch "${name}" was deleted; its builds go on (cancel_deleted_branch_builds is off).`);
    }
    return { kind: "cancel", branch: name, reason: `Branch "${name}" was deleted.` };
  }
  const head = event.head;
  const build: WebhookBuild = {
    commit: head.sha,
    branch: name,
    message: head.message,
    author: head.author,
    tag: type === "tag" ? name : null,
    pullRequest: null,
    source: sourceOf(event),
    env: {},
  };
  const skipTexts = [[head.message, "commit message"]] as const;
  if (type === "tag") {
    if (!settings.buildTags) return nothing("Tag pushes are not built: the pipeline's build_tags setting is off.");
    const filtered = branchFilterProblem(pipeline, name, "Tag");
    if (filtered) return nothing(filtered);
    return admit(build, pipeline, facts, {
      skipTexts,
      anyBranch: settings.skipBuildsForExistingCommits,
      sameBranch: false,
    });
  }
  const pr = facts.openPullRequest;
  if (pr && settings.buildPullRequests && pullRequestFilterProblem(settings, name) === null) {
    const pullRequest = {
      id: pr.number,
      base: pr.baseBranch,
      repository: pr.repository,
      labels: pr.labels,
      draft: pr.draft,
      fork: false,
    };
    return admit({ ...build, pullRequest }, pipeline, facts, {
      skipTexts,
      anyBranch: settings.skipBuildsForExistingCommits,
      sameBranch: settings.skipPullRequestBuildsForExistingCommits,
    });
  }
  if (!settings.buildBranches)
    return nothing("Branch pushes are not built: the pipeline's build_branches setting is off.");
  const filtered = branchFilterProblem(pipeline, name, "Branch");
  if (filtered) return nothing(filtered);
  return admit(build, pipeline, facts, {
    skipTexts,
    anyBranch: settings.skipBuildsForExistingCommits,
    sameBranch: false,
  });
}

function pullRequestDecision(event: PullRequestEvent, pipeline: WebhookPipeline, facts: WebhookFacts): WebhookDecision {
  const { settings } = pipeline;
  if (!settings.buildPullRequests) {
    return nothing("Pull requests are not built: the pipeline's build_pull_requests setting is off.");
  }
  const action = actionName(event.action);
  const what = `pull request #${event.number}`;
  let newCommits = false;
  switch (action) {
    case "opened":
    case "reopened":
      newCommits = true;
      break;
    case "synchronize":
      if (!event.fork) {
        return nothing(
          `New commits on ${what} are built from their push, as it comes from the pipeline's own repository.`,
        );
      }
      newCommits = true;
      break;
    case "ready_for_review":
      if (!settings.buildPullRequestReadyForReview) {
        return nothing(`${cap(what)} became ready for review; build_pull_request_ready_for_review is off.`);
      }
      break;
    case "labeled":
    case "unlabeled":
      if (!settings.buildPullRequestLabelsChanged) {
        return nothing(`The labels of ${what} changed; build_pull_request_labels_changed is off.`);
      }
      break;
    default:
      return nothing(`A pull request that was ${action.replaceAll("_", " ")} is not built.`);
  }
  if (event.fork && !settings.buildPullRequestForks) {
    return nothing(`${cap(what)} comes from a fork; build_pull_request_forks is off.`);
  }
  const filtered = pullRequestFilterProblem(settings, event.head.branch);
  if (filtered) return nothing(filtered);
  const branch =
    event.fork && settings.prefixPullRequestForkBranchNames && event.head.owner !== ""
      ? `${event.head.owner}:${event.head.branch}`
      : event.head.branch;
  const build: WebhookBuild = {
    commit: event.head.sha,
    branch,
    message: event.message || event.title,
    author: event.author,
    tag: null,
    pullRequest: {
      id: event.number,
      base: event.base.branch,
      repository: event.head.cloneUrl,
      labels: event.labels,
      draft: event.draft,
      fork: event.fork,
    },
    source: sourceOf(event),
    env: {},
  };
  return admit(build, pipeline, facts, {
    skipTexts: [
      [event.title, "pull request's title"],
      [event.message, "commit message"],
    ],
    anyBranch: newCommits && settings.skipBuildsForExistingCommits,
    sameBranch: newCommits && settings.skipPullRequestBuildsForExistingCommits,
  });
}

function deploymentBuild(event: DeploymentEvent): WebhookBuild {
  return {
    commit: event.sha,
    branch: event.ref,
    message: event.description || `Deployment of ${event.ref}${event.environment ? ` to ${event.environment}` : ""}`,
    author: event.creator,
    tag: null,
    pullRequest: null,
    source: sourceOf(event),
    env: {
      BUILDKITE_GITHUB_DEPLOYMENT_ID: event.id,
      BUILDKITE_GITHUB_DEPLOYMENT_TASK: event.task,
      BUILDKITE_GITHUB_DEPLOYMENT_ENVIRONMENT: event.environment,
      BUILDKITE_GITHUB_DEPLOYMENT_PAYLOAD: event.payload,
    },
  };
}

function forkBuild(event: ForkEvent): WebhookBuild {
  return {
    commit: "HEAD",
    branch: event.branch,
    message: `Forked to ${event.fork}`,
    author: event.sender,
    tag: null,
    pullRequest: null,
    source: sourceOf(event),
    env: {},
  };
}

/** Why the pipeline's branch filter refuses `name`, or null. */
function branchFilterProblem(pipeline: WebhookPipeline, name: string, what: "Branch" | "Tag"): string | null {
  const filter = pipeline.branchConfiguration;
  if (!filter || matchesBranchFilter(filter, name)) return null;
  return `${what} "${name}" does not match the pipeline's branch filter "${filter}".`;
}

/** Why the pull request branch filter refuses head branch `name`, or null (also when it is not enabled). */
function pullRequestFilterProblem(settings: WebhookSettings, name: string): string | null {
  const filter = settings.pullRequestBranchFilter;
  if (filter === null || matchesBranchFilter(filter, name)) return null;
  return `Pull requests from "${name}" are not built: it does not match pull_request_branch_filter_configuration "${filter}".`;
}

/**
 * The checks every build passes last: no skip marker in its texts, the pipeline's filter condition true of it, and
 * its commit not built already where the existing-commit settings say so.
 */
function admit(
  build: WebhookBuild,
  pipeline: WebhookPipeline,
  facts: WebhookFacts,
  checks: { skipTexts: ReadonlyArray<readonly [string, string]>; anyBranch: boolean; sameBranch: boolean },
): WebhookDecision {
  for (const [text, what] of checks.skipTexts) {
    const marker = skipMarkerIn(text);
    if (marker) return nothing(`The ${what} says ${marker}: not built.`);
  }
  const condition = pipeline.settings.filterCondition;
  if (condition !== null) {
    const result = evaluateCondition(condition, conditionContextOf(build, pipeline));
    if (!result.ok) return nothing(`The pipeline's filter_condition could not be evaluated: ${result.error}`);
    if (!result.value) return nothing(`The pipeline's filter_condition is false for this build: ${condition}`);
  }
  const short = build.commit.slice(0, 10);
  if (checks.anyBranch && facts.commitBuiltOn.length > 0) {
    return nothing(`Commit ${short} was built already (skip_builds_for_existing_commits).`);
  }
  if (checks.sameBranch && facts.commitBuiltOn.includes(build.branch)) {
    return nothing(
      `Commit ${short} was built on "${build.branch}" already (skip_pull_request_builds_for_existing_commits).`,
    );
  }
  return { kind: "build", build };
}

/** What the filter condition sees of a build about to be made: no id or number yet, no creator. */
export function conditionContextOf(build: WebhookBuild, pipeline: WebhookPipeline): BuildContext {
  const pr = build.pullRequest;
  return {
    branch: build.branch,
    commit: build.commit,
    message: build.message,
    source: "webhook",
    sourceEvent: build.source.event,
    sourceAction: build.source.action || null,
    tag: build.tag,
    env: build.env,
    pullRequest: pr
      ? {
          id: pr.id,
          baseBranch: pr.base || null,
          draft: pr.draft,
          labels: pr.labels,
          repository: pr.repository || null,
          fork: pr.fork,
        }
      : null,
    creator: null,
    author: build.author,
    pipeline: { slug: pipeline.slug, defaultBranch: pipeline.defaultBranch, id: pipeline.id },
    organization: pipeline.organization,
  };
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
