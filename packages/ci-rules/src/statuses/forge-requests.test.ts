import type { CommitStatus } from "./commit-statuses.js";
import {
  authorizationHeader,
  forgeState,
  forgeStatusRequest,
  isSourceProviderKind,
  normalizeApiUrl,
  SOURCE_PROVIDER_KINDS,
} from "./forge-requests.js";
import { parseRepositoryUrl, type RepositoryLocation } from "./repository-url.js";

const SHA = "0123456789ABCDEF0123456789abcdef01234567";
const status = (over: Partial<CommitStatus> = {}): CommitStatus => ({
  context: "buildkite/widgets",
  state: "success",
  description: "Build #12 passed (3 seconds)",
  targetUrl: "http://ci.example.com/acme/widgets/builds/12",
  canceled: false,
  order: [12, 4],
  ...over,
});
const repo = (url: string): RepositoryLocation => {
  const location = parseRepositoryUrl(url);
  if (location === null) throw new Error(url);
  return location;
};

describe("normalizeApiUrl", () => {
  it.each([
    ["github", "", "https://api.github.com"],
    ["github", "https://api.github.com/", "https://api.github.com"],
    ["github_enterprise", "https://ghe.example.com", "https://ghe.example.com/api/v3"],
    ["github_enterprise", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/v3"],
    ["gitlab", "", "https://gitlab.com/api/v4"],
    ["gitlab", "https://gitlab.example.com", "https://gitlab.example.com/api/v4"],
    ["gitlab", "https://example.com/gitlab/api/v4", "https://example.com/gitlab/api/v4"],
    ["bitbucket", "", "https://api.bitbucket.org/2.0"],
    ["bitbucket", "https://api.bitbucket.org", "https://api.bitbucket.org/2.0"],
    ["gitea", "http://127.0.0.1:3000", "http://127.0.0.1:3000/api/v1"],
    ["gitea", "http://127.0.0.1:3000/api/v1", "http://127.0.0.1:3000/api/v1"],
    ["gitea", "HTTPS://Codeberg.ORG", "https://codeberg.org/api/v1"],
  ] as const)("%s %p → %s", (kind, given, stored) => {
    expect(normalizeApiUrl(kind, given)).toBe(stored);
  });

  it.each([
    ["gitea", "", /needs its API URL/],
    ["github_enterprise", "  ", /needs its API URL/],
    ["gitea", "nope", /not a URL/],
    ["gitea", "ftp://example.com", /http or https/],
    ["gitea", "https://user:pw@example.com", /credentials/],
    ["gitea", "https://example.com/?x=1", /query/],
    ["gitea", "https://example.com/#x", /fragment/],
    ["gitea", `https://example.com/${"a".repeat(600)}`, /longer than 512/],
  ] as const)("refuses %s %p", (kind, given, message) => {
    expect(() => normalizeApiUrl(kind, given)).toThrow(message);
  });
});

describe("isSourceProviderKind", () => {
  it("knows the five kinds and nothing else", () => {
    for (const kind of SOURCE_PROVIDER_KINDS) expect(isSourceProviderKind(kind)).toBe(true);
    expect(isSourceProviderKind("forgejo")).toBe(false);
    expect(isSourceProviderKind("")).toBe(false);
  });
});

describe("forgeState", () => {
  it.each([
    ["github", "pending", false, "pending"],
    ["github", "error", true, "error"],
    ["gitea", "failure", false, "failure"],
    ["gitlab", "pending", false, "running"],
    ["gitlab", "success", false, "success"],
    ["gitlab", "failure", false, "failed"],
    ["gitlab", "error", true, "canceled"],
    ["gitlab", "error", false, "failed"],
    ["bitbucket", "pending", false, "INPROGRESS"],
    ["bitbucket", "success", false, "SUCCESSFUL"],
    ["bitbucket", "failure", false, "FAILED"],
    ["bitbucket", "error", true, "STOPPED"],
    ["bitbucket", "error", false, "FAILED"],
  ] as const)("%s says %s (canceled %s) as %s", (kind, state, canceled, word) => {
    expect(forgeState(kind, { state, canceled })).toBe(word);
  });
});

describe("forgeStatusRequest", () => {
  it("GitHub: POST /repos/{owner}/{repo}/statuses/{sha} with state, target_url, description, context", () => {
    expect(
      forgeStatusRequest("github", "https://api.github.com", repo("git@github.com:acme/widgets.git"), SHA, status()),
    ).toEqual({
      method: "POST",
      url: `https://api.github.com/repos/acme/widgets/statuses/${SHA.toLowerCase()}`,
      headers: {
        "Content-Type": "application/json",
        Accept: "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
      },
      body: {
        state: "success",
        target_url: "http://ci.example.com/acme/widgets/builds/12",
        description: "Build #12 passed (3 seconds)",
        context: "buildkite/widgets",
      },
    });
  });

  it("GitHub Enterprise: under its /api/v3", () => {
    const r = forgeStatusRequest(
      "github_enterprise",
      "https://ghe.example.com/api/v3",
      repo("https://ghe.example.com/acme/widgets.git"),
      SHA,
      status({ state: "pending" }),
    );
    expect(r.url).toBe(`https://ghe.example.com/api/v3/repos/acme/widgets/statuses/${SHA.toLowerCase()}`);
    expect(r.body.state).toBe("pending");
  });

  it("Gitea: POST /api/v1/repos/{owner}/{repo}/statuses/{sha}", () => {
    const r = forgeStatusRequest(
      "gitea",
      "http://127.0.0.1:3000/api/v1",
      repo("http://127.0.0.1:3000/alice/demo.git"),
      SHA,
      status({ state: "failure", description: "Build #3 failed" }),
    );
    expect(r).toEqual({
      method: "POST",
      url: `http://127.0.0.1:3000/api/v1/repos/alice/demo/statuses/${SHA.toLowerCase()}`,
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: {
        state: "failure",
        target_url: "http://ci.example.com/acme/widgets/builds/12",
        description: "Build #3 failed",
        context: "buildkite/widgets",
      },
    });
  });

  it("GitLab: POST /projects/{url-encoded path}/statuses/{sha} with name for the context", () => {
    const r = forgeStatusRequest(
      "gitlab",
      "https://gitlab.com/api/v4",
      repo("git@gitlab.com:group/sub/project.git"),
      SHA,
      status({ state: "error", canceled: true }),
    );
    expect(r.url).toBe(`https://gitlab.com/api/v4/projects/group%2Fsub%2Fproject/statuses/${SHA.toLowerCase()}`);
    expect(r.body).toEqual({
      state: "canceled",
      name: "buildkite/widgets",
      target_url: "http://ci.example.com/acme/widgets/builds/12",
      description: "Build #12 passed (3 seconds)",
    });
  });

  it("Bitbucket Cloud: POST /2.0/repositories/{workspace}/{repo}/commit/{sha}/statuses/build with key and url", () => {
    const r = forgeStatusRequest(
      "bitbucket",
      "https://api.bitbucket.org/2.0",
      repo("git@bitbucket.org:team/app.git"),
      SHA,
      status({ state: "pending" }),
    );
    expect(r.url).toBe(
      `https://api.bitbucket.org/2.0/repositories/team/app/commit/${SHA.toLowerCase()}/statuses/build`,
    );
    expect(r.body).toEqual({
      key: "buildkite/widgets",
      state: "INPROGRESS",
      url: "http://ci.example.com/acme/widgets/builds/12",
      description: "Build #12 passed (3 seconds)",
      name: "buildkite/widgets",
    });
  });

  it("encodes path segments, so a name never reaches another path", () => {
    const location: RepositoryLocation = { host: "h", port: null, owner: "a b", name: "c?d", path: "a b/c?d" };
    expect(forgeStatusRequest("gitea", "http://h/api/v1", location, SHA, status()).url).toBe(
      `http://h/api/v1/repos/a%20b/c%3Fd/statuses/${SHA.toLowerCase()}`,
    );
  });
});

describe("authorizationHeader", () => {
  it("is Bearer for GitHub, GitLab and Bitbucket access tokens, token for Gitea, Basic for a Bitbucket app password", () => {
    expect(authorizationHeader("github", "ghp_x")).toEqual({ Authorization: "Bearer ghp_x" });
    expect(authorizationHeader("github_enterprise", "t")).toEqual({ Authorization: "Bearer t" });
    expect(authorizationHeader("gitlab", "glpat-x")).toEqual({ Authorization: "Bearer glpat-x" });
    expect(authorizationHeader("bitbucket", "ATCTT3x")).toEqual({ Authorization: "Bearer ATCTT3x" });
    expect(authorizationHeader("gitea", "abc")).toEqual({ Authorization: "token abc" });
    expect(authorizationHeader("bitbucket", "me:app-pass")).toEqual({
      Authorization: `Basic ${Buffer.from("me:app-pass").toString("base64")}`,
    });
  });
});
