import { DEFAULT_PROVIDER_SETTINGS, webhookSettings } from "./provider-settings.js";

describe("webhookSettings", () => {
  it("reads Buildkite's defaults for a code-triggered pipeline", () => {
    expect(webhookSettings(DEFAULT_PROVIDER_SETTINGS)).toEqual({
      triggerMode: "code",
      buildBranches: true,
      buildTags: false,
      buildPullRequests: true,
      buildPullRequestForks: false,
      prefixPullRequestForkBranchNames: true,
      buildPullRequestReadyForReview: false,
      buildPullRequestLabelsChanged: false,
      pullRequestBranchFilter: null,
      skipBuildsForExistingCommits: false,
      skipPullRequestBuildsForExistingCommits: true,
      cancelDeletedBranchBuilds: false,
      filterCondition: null,
    });
  });

  it("gives a setting a pipeline lacks (or holds with the wrong type) its default", () => {
    expect(webhookSettings({})).toEqual(webhookSettings(DEFAULT_PROVIDER_SETTINGS));
    expect(webhookSettings({ build_tags: "yes", trigger_mode: 3 })).toMatchObject({
      buildTags: false,
      triggerMode: "code",
    });
  });

  it("reads the filters only when enabled, trimmed", () => {
    const off = webhookSettings({ filter_condition: "true", pull_request_branch_filter_configuration: "main" });
    expect(off).toMatchObject({ filterCondition: null, pullRequestBranchFilter: null });
    const on = webhookSettings({
      filter_enabled: true,
      filter_condition: " build.branch == 'main' ",
      pull_request_branch_filter_enabled: true,
      pull_request_branch_filter_configuration: " feat/* ",
    });
    expect(on).toMatchObject({ filterCondition: "build.branch == 'main'", pullRequestBranchFilter: "feat/*" });
    // An enabled filter with no condition filters nothing.
    expect(webhookSettings({ filter_enabled: true, filter_condition: " " }).filterCondition).toBeNull();
  });

  it.each(["code", "deployment", "fork", "none"])("reads trigger_mode %s", (mode) => {
    expect(webhookSettings({ trigger_mode: mode }).triggerMode).toBe(mode);
  });
});
