import { pullRequestStateOf } from "./open-pull-requests.js";
import type { PullRequestEvent } from "./webhook-event.js";

const event = (action: PullRequestEvent["action"]): PullRequestEvent => ({
  kind: "pull_request",
  action,
  number: "5",
  title: "t",
  draft: null,
  labels: ["a"],
  head: { branch: "feature", sha: "abc", repository: "acme/app", owner: "acme", cloneUrl: "https://x/acme/app.git" },
  base: { branch: "main", repository: "acme/app" },
  fork: false,
  message: "",
  author: null,
});

describe("pullRequestStateOf", () => {
  it("keeps a pull request open after any event but closed, with what its builds carry", () => {
    expect(pullRequestStateOf(event("labeled"))).toEqual({
      headBranch: "feature",
      fork: false,
      open: true,
      pullRequest: {
        number: "5",
        baseBranch: "main",
        repository: "https://x/acme/app.git",
        labels: ["a"],
        draft: null,
      },
    });
    expect(pullRequestStateOf(event({ other: "assigned" })).open).toBe(true);
    expect(pullRequestStateOf(event("closed")).open).toBe(false);
  });
});
