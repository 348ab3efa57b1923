/**
 * A pipeline's provider settings (REST `provider.settings`) as the webhook rules read them (docs/webhooks.md), and
 * the values a new pipeline starts with, which are Buildkite's for a code-triggered pipeline.
 */

/** What creates builds: code (pushes, pull requests), deployments, forks of the repository, or nothing. */
export const TRIGGER_MODES = ["code", "deployment", "fork", "none"] as const;
export type TriggerMode = (typeof TRIGGER_MODES)[number];

/** The settings a new pipeline starts with (the pipelines service stores them; REST shows them). */
export const DEFAULT_PROVIDER_SETTINGS = {
  trigger_mode: "code",
  build_pull_requests: true,
  pull_request_branch_filter_enabled: false,
  skip_builds_for_existing_commits: false,
  skip_pull_request_builds_for_existing_commits: true,
  build_pull_request_ready_for_review: false,
  build_pull_request_labels_changed: false,
  build_pull_request_forks: false,
  prefix_pull_request_fork_branch_names: true,
  build_branches: true,
  build_tags: false,
  cancel_deleted_branch_builds: false,
  publish_commit_status: true,
  publish_commit_status_per_step: false,
  separate_pull_request_statuses: false,
  publish_blocked_as_pending: false,
  use_step_key_as_commit_status: false,
  filter_enabled: false,
} as const satisfies Record<string, boolean | string>;

/** The settings the rules read, typed; a setting a pipeline lacks has its default. */
export interface WebhookSettings {
  triggerMode: TriggerMode;
  buildBranches: boolean;
  buildTags: boolean;
  buildPullRequests: boolean;
  buildPullRequestForks: boolean;
  prefixPullRequestForkBranchNames: boolean;
  buildPullRequestReadyForReview: boolean;
  buildPullRequestLabelsChanged: boolean;
  /** The pull request branch filter, when `pull_request_branch_filter_enabled`; null otherwise. */
  pullRequestBranchFilter: string | null;
  skipBuildsForExistingCommits: boolean;
  skipPullRequestBuildsForExistingCommits: boolean;
  cancelDeletedBranchBuilds: boolean;
  /** The conditional every webhook build must pass, when `filter_enabled`; null otherwise. */
  filterCondition: string | null;
}

/** Reads a pipeline's provider settings (a JSON object as stored). */
export function webhookSettings(settings: Readonly<Record<string, unknown>>): WebhookSettings {
  const flag = (key: keyof typeof DEFAULT_PROVIDER_SETTINGS): boolean => {
    const value = settings[key];
    return typeof value === "boolean" ? value : DEFAULT_PROVIDER_SETTINGS[key] === true;
  };
  const text = (key: string): string => {
    const value = settings[key];
    return typeof value === "string" ? value.trim() : "";
  };
  const mode = text("trigger_mode");
  return {
    triggerMode: (TRIGGER_MODES as readonly string[]).includes(mode) ? (mode as TriggerMode) : "code",
    buildBranches: flag("build_branches"),
    buildTags: flag("build_tags"),
    buildPullRequests: flag("build_pull_requests"),
    buildPullRequestForks: flag("build_pull_request_forks"),
    prefixPullRequestForkBranchNames: flag("prefix_pull_request_fork_branch_names"),
    buildPullRequestReadyForReview: flag("build_pull_request_ready_for_review"),
    buildPullRequestLabelsChanged: flag("build_pull_request_labels_changed"),
    pullRequestBranchFilter: flag("pull_request_branch_filter_enabled")
      ? text("pull_request_branch_filter_configuration")
      : null,
    skipBuildsForExistingCommits: flag("skip_builds_for_existing_commits"),
    skipPullRequestBuildsForExistingCommits: flag("skip_pull_request_builds_for_existing_commits"),
    cancelDeletedBranchBuilds: flag("cancel_deleted_branch_builds"),
    filterCondition: flag("filter_enabled") && text("filter_condition") !== "" ? text("filter_condition") : null,
  };
}
