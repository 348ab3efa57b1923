import { branchFilterProblem, conditionProblem, DEFAULT_PROVIDER_SETTINGS, TRIGGER_MODES } from "@conveyor/ci-rules";
import { TEXT_LIMITS, textProblem } from "@conveyor/runtime";

/** The source providers the service recognises from a repository URL; anything else is plain "git". */
export type ProviderId = "github" | "gitlab" | "bitbucket" | "git";

const HOSTS: Array<[RegExp, ProviderId]> = [
  [/(^|[@/.])github\.com[:/]/i, "github"],
  [/(^|[@/.])gitlab\.com[:/]/i, "gitlab"],
  [/(^|[@/.])bitbucket\.org[:/]/i, "bitbucket"],
];

/** The provider of a repository URL, for example git@github.com:acme/app.git → "github". */
export function providerIdFor(repository: string): ProviderId {
  return HOSTS.find(([re]) => re.test(repository))?.[1] ?? "git";
}

const BOOLEAN_SETTINGS = [
  "build_pull_requests",
  "pull_request_branch_filter_enabled",
  "skip_builds_for_existing_commits",
  "skip_pull_request_builds_for_existing_commits",
  "build_pull_request_ready_for_review",
  "build_pull_request_labels_changed",
  "build_pull_request_forks",
  "prefix_pull_request_fork_branch_names",
  "build_branches",
  "build_tags",
  "cancel_deleted_branch_builds",
  "publish_commit_status",
  "publish_commit_status_per_step",
  "separate_pull_request_statuses",
  "publish_blocked_as_pending",
  "use_step_key_as_commit_status",
  "filter_enabled",
] as const;

const STRING_SETTINGS = [
  "trigger_mode",
  "filter_condition",
  "pull_request_branch_filter_configuration",
  "repository",
] as const;

export type ProviderSettings = Record<string, boolean | string>;

/** The settings a new pipeline starts with, as Buildkite's defaults for a code-triggered pipeline (ci-rules). */
export function defaultProviderSettings(provider: ProviderId, repository: string): ProviderSettings {
  const settings: ProviderSettings = { ...DEFAULT_PROVIDER_SETTINGS };
  const slug = /[:/]([^/:]+\/[^/]+?)(\.git)?\/?$/.exec(repository)?.[1];
  if (provider !== "git" && slug) settings.repository = slug;
  return settings;
}

/**
 * Checks client-given provider settings: known keys only, booleans where booleans belong and strings elsewhere.
 * Returns the accepted settings and the problems, each as [key, reason].
 */
export function checkProviderSettings(input: Record<string, unknown>): {
  settings: ProviderSettings;
  problems: Array<[string, string]>;
} {
  const settings: ProviderSettings = {};
  const problems: Array<[string, string]> = [];
  for (const [key, value] of Object.entries(input)) {
    if ((BOOLEAN_SETTINGS as readonly string[]).includes(key)) {
      if (typeof value === "boolean") settings[key] = value;
      else problems.push([key, "must be true or false"]);
    } else if ((STRING_SETTINGS as readonly string[]).includes(key)) {
      const problem = typeof value === "string" ? textProblem(value, { max: TEXT_LIMITS.setting }) : null;
      if (typeof value !== "string") problems.push([key, "must be a string"]);
      else if (problem) problems.push([key, problem]);
      else if (key === "trigger_mode" && !(TRIGGER_MODES as readonly string[]).includes(value)) {
        problems.push([key, `must be one of ${TRIGGER_MODES.join(", ")}`]);
      } else {
        const invalid = patternProblem(key, value);
        if (invalid) problems.push([key, invalid]);
        else settings[key] = value;
      }
    } else {
      problems.push([key, "is not a known provider setting"]);
    }
  }
  return { settings, problems };
}

/** Why a filter setting's value is not a valid conditional or branch filter (checked when saved, not per delivery). */
function patternProblem(key: string, value: string): string | undefined {
  if (value.trim() === "") return undefined;
  if (key === "filter_condition") return conditionProblem(value);
  if (key === "pull_request_branch_filter_configuration") return branchFilterProblem(value) ?? undefined;
  return undefined;
}
