import { checkProviderSettings, defaultProviderSettings, providerIdFor } from "./provider.js";

describe("providerIdFor", () => {
  it.each([
    ["git@github.com:acme/app.git", "github"],
    ["https://github.com/acme/app", "github"],
    ["https://gitlab.com/acme/app.git", "gitlab"],
    ["git@bitbucket.org:acme/app.git", "bitbucket"],
    ["https://git.example.com/acme/app.git", "git"],
    ["/srv/repos/app", "git"],
    ["https://notgithub.com/acme/app", "git"],
  ])("%s → %s", (repo, id) => {
    expect(providerIdFor(repo)).toBe(id);
  });
});

describe("defaultProviderSettings", () => {
  it("starts code-triggered and names the repository for hosted providers", () => {
    const settings = defaultProviderSettings("github", "git@github.com:acme/app.git");
    expect(settings).toMatchObject({ trigger_mode: "code", build_branches: true, repository: "acme/app" });
    expect(defaultProviderSettings("git", "/srv/app").repository).toBeUndefined();
  });

  it("types every setting as go-buildkite decodes it", () => {
    for (const [key, value] of Object.entries(defaultProviderSettings("gitlab", "https://gitlab.com/a/b"))) {
      expect([key, typeof value]).toEqual([key, key === "trigger_mode" || key === "repository" ? "string" : "boolean"]);
    }
  });
});

describe("checkProviderSettings", () => {
  it("accepts known keys with the right types", () => {
    expect(checkProviderSettings({ build_tags: true, trigger_mode: "none" })).toEqual({
      settings: { build_tags: true, trigger_mode: "none" },
      problems: [],
    });
  });

  it("reports unknown keys, wrong types and unknown trigger modes", () => {
    const { problems } = checkProviderSettings({ build_tags: "yes", trigger_mode: "always", bogus: 1 });
    expect(problems).toEqual([
      ["build_tags", "must be true or false"],
      ["trigger_mode", "must be one of code, deployment, fork, none"],
      ["bogus", "is not a known provider setting"],
    ]);
  });

  it("checks a filter condition and a pull request branch filter when they are saved", () => {
    const { settings, problems } = checkProviderSettings({
      filter_condition: "build.branch ==",
      pull_request_branch_filter_configuration: "main !",
    });
    expect(settings).toEqual({});
    expect(problems.map(([key]) => key)).toEqual(["filter_condition", "pull_request_branch_filter_configuration"]);
    expect(
      checkProviderSettings({
        filter_condition: 'build.pull_request.base_branch =~ /main/ && build.source_event == "pull_request"',
        pull_request_branch_filter_configuration: "feature/* !feature/x",
      }).problems,
    ).toEqual([]);
    expect(checkProviderSettings({ filter_condition: "" }).problems).toEqual([]);
  });
});
