import {
  decideWebhookEvent,
  lookupsFor,
  type OpenPullRequest,
  type WebhookDecision,
  type WebhookFacts,
  type WebhookPipeline,
} from "./build-rules.js";
import { DEFAULT_PROVIDER_SETTINGS, webhookSettings } from "./provider-settings.js";
import type { DeploymentEvent, ForkEvent, PullRequestEvent, PushEvent } from "./webhook-event.js";

const SHA = "a".repeat(40);
const ADA = { name: "Ada", email: "ada@example.com" };

const pipeline = (
  settings: Record<string, unknown> = {},
  branchConfiguration: string | null = null,
): WebhookPipeline => ({
  id: "p-1",
  slug: "app",
  defaultBranch: "main",
  branchConfiguration,
  organization: { id: "o-1", slug: "acme" },
  settings: webhookSettings({ ...DEFAULT_PROVIDER_SETTINGS, ...settings }),
});
const NO_FACTS: WebhookFacts = { commitBuiltOn: [], openPullRequest: null };

const push = (name: string, over: Partial<PushEvent> = {}): PushEvent => ({
  kind: "push",
  ref: { type: "branch", name },
  head: { sha: SHA, message: "Fix the thing", author: ADA },
  deleted: false,
  ...over,
});
const tagPush = (name: string): PushEvent => push(name, { ref: { type: "tag", name } });
const pr = (action: PullRequestEvent["action"], over: Partial<PullRequestEvent> = {}): PullRequestEvent => ({
  kind: "pull_request",
  action,
  number: "42",
  title: "Make it better",
  draft: false,
  labels: ["ui"],
  head: {
    branch: "feature",
    sha: SHA,
    repository: "acme/app",
    owner: "acme",
    cloneUrl: "https://github.com/acme/app.git",
  },
  base: { branch: "main", repository: "acme/app" },
  fork: false,
  message: "",
  author: { name: "ada", email: "" },
  ...over,
});
const forkPr = (action: PullRequestEvent["action"], over: Partial<PullRequestEvent> = {}) =>
  pr(action, {
    fork: true,
    head: {
      branch: "main",
      sha: SHA,
      repository: "someone/app",
      owner: "someone",
      cloneUrl: "https://github.com/someone/app.git",
    },
    ...over,
  });

const reason = (decision: WebhookDecision) => (decision.kind === "nothing" ? decision.reason : `(${decision.kind})`);
const built = (decision: WebhookDecision) => {
  if (decision.kind !== "build") throw new Error(`expected a build, got: ${reason(decision)}`);
  return decision.build;
};

describe("branch pushes", () => {
  it("build the pushed commit on its branch, with its message and author", () => {
    expect(decideWebhookEvent(push("main"), pipeline(), NO_FACTS)).toEqual({
      kind: "build",
      build: {
        commit: SHA,
        branch: "main",
        message: "Fix the thing",
        author: ADA,
        tag: null,
        pullRequest: null,
        source: { event: "push", action: "" },
        env: {},
      },
    });
  });

  it("build nothing with build_branches off", () => {
    expect(reason(decideWebhookEvent(push("main"), pipeline({ build_branches: false }), NO_FACTS))).toBe(
      "Branch pushes are not built: the pipeline's build_branches setting is off.",
    );
  });

  it("build only branches the pipeline's branch filter lets through", () => {
    const filtered = pipeline({}, "main release/*");
    expect(built(decideWebhookEvent(push("release/1.2"), filtered, NO_FACTS)).branch).toBe("release/1.2");
    expect(reason(decideWebhookEvent(push("feature"), filtered, NO_FACTS))).toBe(
      'Branch "feature" does not match the pipeline\'s branch filter "main release/*".',
    );
  });

  it("build as the open pull request of their branch, with its details, ignoring the branch filter", () => {
    const open: OpenPullRequest = {
      number: "42",
      baseBranch: "main",
      repository: "https://github.com/acme/app.git",
      labels: ["ui"],
      draft: true,
    };
    const build = built(
      decideWebhookEvent(push("feature"), pipeline({}, "main"), { ...NO_FACTS, openPullRequest: open }),
    );
    expect(build.branch).toBe("feature");
    expect(build.pullRequest).toEqual({
      id: "42",
      base: "main",
      repository: "https://github.com/acme/app.git",
      labels: ["ui"],
      draft: true,
      fork: false,
    });
    expect(build.source).toEqual({ event: "push", action: "" });
  });

  it("build as plain branch pushes when pull requests are not built, or their filter refuses the branch", () => {
    const open: OpenPullRequest = { number: "1", baseBranch: "main", repository: "", labels: [], draft: null };
    const facts = { ...NO_FACTS, openPullRequest: open };
    expect(
      built(decideWebhookEvent(push("feature"), pipeline({ build_pull_requests: false }), facts)).pullRequest,
    ).toBeNull();
    const prFilter = pipeline({
      pull_request_branch_filter_enabled: true,
      pull_request_branch_filter_configuration: "main",
    });
    expect(built(decideWebhookEvent(push("feature"), prFilter, facts)).pullRequest).toBeNull();
  });

  it("with an open pull request still build with build_branches off", () => {
    const open: OpenPullRequest = { number: "7", baseBranch: "main", repository: "", labels: [], draft: null };
    const decision = decideWebhookEvent(push("feature"), pipeline({ build_branches: false }), {
      ...NO_FACTS,
      openPullRequest: open,
    });
    expect(built(decision).pullRequest?.id).toBe("7");
  });

  it.each(["[ci skip]", "[skip ci]", "[ci-skip]", "[skip-ci]", "[Skip CI]"])(
    "build nothing when the message says %s",
    (marker) => {
      const event = push("main", { head: { sha: SHA, message: `Docs only\n\n${marker}`, author: ADA } });
      expect(reason(decideWebhookEvent(event, pipeline(), NO_FACTS))).toBe(
        `The commit message says ${marker}: not built.`,
      );
    },
  );

  it("build nothing for a commit built already, with skip_builds_for_existing_commits", () => {
    const facts = { ...NO_FACTS, commitBuiltOn: ["other"] };
    expect(built(decideWebhookEvent(push("main"), pipeline(), facts)).commit).toBe(SHA);
    expect(reason(decideWebhookEvent(push("main"), pipeline({ skip_builds_for_existing_commits: true }), facts))).toBe(
      "Commit aaaaaaaaaa was built already (skip_builds_for_existing_commits).",
    );
  });
});

describe("tag pushes", () => {
  it("build with build_tags, the tag as both branch and tag", () => {
    const build = built(decideWebhookEvent(tagPush("v1.0"), pipeline({ build_tags: true }), NO_FACTS));
    expect(build).toMatchObject({ branch: "v1.0", tag: "v1.0", commit: SHA });
  });

  it("build nothing without build_tags", () => {
    expect(reason(decideWebhookEvent(tagPush("v1.0"), pipeline(), NO_FACTS))).toBe(
      "Tag pushes are not built: the pipeline's build_tags setting is off.",
    );
  });

  it("are held to the branch filter", () => {
    const filtered = pipeline({ build_tags: true }, "main v*");
    expect(built(decideWebhookEvent(tagPush("v2"), filtered, NO_FACTS)).tag).toBe("v2");
    expect(reason(decideWebhookEvent(tagPush("nightly"), filtered, NO_FACTS))).toBe(
      'Tag "nightly" does not match the pipeline\'s branch filter "main v*".',
    );
  });

  it("build even when a build of the branch has their commit, unless skip_builds_for_existing_commits", () => {
    const facts = { ...NO_FACTS, commitBuiltOn: ["main"] };
    expect(decideWebhookEvent(tagPush("v1"), pipeline({ build_tags: true }), facts).kind).toBe("build");
    expect(
      decideWebhookEvent(tagPush("v1"), pipeline({ build_tags: true, skip_builds_for_existing_commits: true }), facts)
        .kind,
    ).toBe("nothing");
  });
});

describe("deleted refs", () => {
  const deleted = (type: "branch" | "tag") => push("gone", { ref: { type, name: "gone" }, head: null, deleted: true });

  it("cancel the branch's builds with cancel_deleted_branch_builds", () => {
    expect(decideWebhookEvent(deleted("branch"), pipeline({ cancel_deleted_branch_builds: true }), NO_FACTS)).toEqual({
      kind: "cancel",
      branch: "gone",
      reason: 'Branch "gone" was deleted.',
    });
  });

  it("change nothing otherwise, saying why", () => {
    expect(reason(decideWebhookEvent(deleted("branch"), pipeline(), NO_FACTS))).toBe(
      'Branch "gone" was deleted; its builds go on (cancel_deleted_branch_builds is off).',
    );
    expect(reason(decideWebhookEvent(deleted("tag"), pipeline({ cancel_deleted_branch_builds: true }), NO_FACTS))).toBe(
      'Tag "gone" was deleted: there is nothing to build or cancel.',
    );
  });
});

describe("pull requests", () => {
  it("build when opened, with the pull request's details", () => {
    expect(decideWebhookEvent(pr("opened"), pipeline(), NO_FACTS)).toEqual({
      kind: "build",
      build: {
        commit: SHA,
        branch: "feature",
        message: "Make it better",
        author: { name: "ada", email: "" },
        tag: null,
        pullRequest: {
          id: "42",
          base: "main",
          repository: "https://github.com/acme/app.git",
          labels: ["ui"],
          draft: false,
          fork: false,
        },
        source: { event: "pull_request", action: "opened" },
        env: {},
      },
    });
  });

  it("take the head commit's message when the forge sends it", () => {
    expect(built(decideWebhookEvent(pr("opened", { message: "Fix\n" }), pipeline(), NO_FACTS)).message).toBe("Fix\n");
  });

  it("build when reopened, and drafts too", () => {
    expect(built(decideWebhookEvent(pr("reopened", { draft: true }), pipeline(), NO_FACTS)).pullRequest?.draft).toBe(
      true,
    );
  });

  it("build nothing with build_pull_requests off", () => {
    expect(reason(decideWebhookEvent(pr("opened"), pipeline({ build_pull_requests: false }), NO_FACTS))).toBe(
      "Pull requests are not built: the pipeline's build_pull_requests setting is off.",
    );
  });

  it("ignore the pipeline's branch filter, and follow the pull request branch filter", () => {
    expect(decideWebhookEvent(pr("opened"), pipeline({}, "main"), NO_FACTS).kind).toBe("build");
    const filtered = pipeline({
      pull_request_branch_filter_enabled: true,
      pull_request_branch_filter_configuration: "feat* !feature-x",
    });
    expect(decideWebhookEvent(pr("opened"), filtered, NO_FACTS).kind).toBe("build");
    const refused = pr("opened", { head: { ...pr("opened").head, branch: "feature-x" } });
    expect(reason(decideWebhookEvent(refused, filtered, NO_FACTS))).toBe(
      'Pull requests from "feature-x" are not built: it does not match pull_request_branch_filter_configuration "feat* !feature-x".',
    );
    // A filter that is not enabled filters nothing.
    const disabled = pipeline({ pull_request_branch_filter_configuration: "nothing-matches" });
    expect(decideWebhookEvent(pr("opened"), disabled, NO_FACTS).kind).toBe("build");
  });

  it("leave new commits of the pipeline's own branches to their push", () => {
    expect(reason(decideWebhookEvent(pr("synchronize"), pipeline(), NO_FACTS))).toBe(
      "New commits on pull request #42 are built from their push, as it comes from the pipeline's own repository.",
    );
  });

  it("build new commits from forks, only with build_pull_request_forks", () => {
    expect(reason(decideWebhookEvent(forkPr("synchronize"), pipeline(), NO_FACTS))).toBe(
      "Pull request #42 comes from a fork; build_pull_request_forks is off.",
    );
    const build = built(
      decideWebhookEvent(forkPr("synchronize"), pipeline({ build_pull_request_forks: true }), NO_FACTS),
    );
    expect(build.branch).toBe("someone:main");
    expect(build.pullRequest).toMatchObject({ fork: true, repository: "https://github.com/someone/app.git" });
    expect(build.source).toEqual({ event: "pull_request", action: "synchronize" });
  });

  it("prefix a fork's branch with its owner only with prefix_pull_request_fork_branch_names", () => {
    const settings = { build_pull_request_forks: true, prefix_pull_request_fork_branch_names: false };
    expect(built(decideWebhookEvent(forkPr("opened"), pipeline(settings), NO_FACTS)).branch).toBe("main");
    const ownerless = forkPr("opened", { head: { ...forkPr("opened").head, owner: "" } });
    expect(built(decideWebhookEvent(ownerless, pipeline({ build_pull_request_forks: true }), NO_FACTS)).branch).toBe(
      "main",
    );
  });

  it("build when ready for review only with build_pull_request_ready_for_review", () => {
    expect(reason(decideWebhookEvent(pr("ready_for_review"), pipeline(), NO_FACTS))).toBe(
      "Pull request #42 became ready for review; build_pull_request_ready_for_review is off.",
    );
    const on = pipeline({ build_pull_request_ready_for_review: true });
    expect(built(decideWebhookEvent(pr("ready_for_review"), on, NO_FACTS)).source.action).toBe("ready_for_review");
  });

  it("build when labels change only with build_pull_request_labels_changed", () => {
    for (const action of ["labeled", "unlabeled"] as const) {
      expect(reason(decideWebhookEvent(pr(action), pipeline(), NO_FACTS))).toBe(
        "The labels of pull request #42 changed; build_pull_request_labels_changed is off.",
      );
      const on = pipeline({ build_pull_request_labels_changed: true });
      expect(built(decideWebhookEvent(pr(action), on, NO_FACTS)).pullRequest?.labels).toEqual(["ui"]);
    }
  });

  it.each([
    ["closed", "A pull request that was closed is not built."],
    ["edited", "A pull request that was edited is not built."],
    ["converted_to_draft", "A pull request that was converted to draft is not built."],
  ] as const)("build nothing when %s", (action, expected) => {
    expect(reason(decideWebhookEvent(pr(action), pipeline(), NO_FACTS))).toBe(expected);
  });

  it("build nothing for actions the rules do not know, naming them", () => {
    expect(reason(decideWebhookEvent(pr({ other: "review_requested" }), pipeline(), NO_FACTS))).toBe(
      "A pull request that was review requested is not built.",
    );
  });

  it("build nothing when the title or the head commit's message says to skip", () => {
    expect(reason(decideWebhookEvent(pr("opened", { title: "WIP [skip ci]" }), pipeline(), NO_FACTS))).toBe(
      "The pull request's title says [skip ci]: not built.",
    );
    expect(reason(decideWebhookEvent(pr("opened", { message: "x [ci skip]" }), pipeline(), NO_FACTS))).toBe(
      "The commit message says [ci skip]: not built.",
    );
  });

  it("skip a commit built on the same branch (skip_pull_request_builds_for_existing_commits, on by default)", () => {
    const onBranch = { ...NO_FACTS, commitBuiltOn: ["feature"] };
    expect(reason(decideWebhookEvent(pr("opened"), pipeline(), onBranch))).toBe(
      'Commit aaaaaaaaaa was built on "feature" already (skip_pull_request_builds_for_existing_commits).',
    );
    expect(decideWebhookEvent(pr("opened"), pipeline(), { ...NO_FACTS, commitBuiltOn: ["main"] }).kind).toBe("build");
    const off = pipeline({ skip_pull_request_builds_for_existing_commits: false });
    expect(decideWebhookEvent(pr("reopened"), off, onBranch).kind).toBe("build");
  });

  it("rebuild on labels and readiness even when the commit was built", () => {
    const onBranch = { ...NO_FACTS, commitBuiltOn: ["feature"] };
    const on = pipeline({
      build_pull_request_labels_changed: true,
      build_pull_request_ready_for_review: true,
      skip_builds_for_existing_commits: true,
    });
    expect(decideWebhookEvent(pr("labeled"), on, onBranch).kind).toBe("build");
    expect(decideWebhookEvent(pr("ready_for_review"), on, onBranch).kind).toBe("build");
  });

  it("skip a commit built on any branch with skip_builds_for_existing_commits", () => {
    const elsewhere = { ...NO_FACTS, commitBuiltOn: ["main"] };
    expect(
      reason(decideWebhookEvent(pr("opened"), pipeline({ skip_builds_for_existing_commits: true }), elsewhere)),
    ).toBe("Commit aaaaaaaaaa was built already (skip_builds_for_existing_commits).");
  });
});

describe("the filter condition", () => {
  const filtered = (condition: string) => pipeline({ filter_enabled: true, filter_condition: condition });

  it("must be true of the build", () => {
    const condition = "build.pull_request.base_branch =~ /^main$/";
    expect(decideWebhookEvent(pr("opened"), filtered(condition), NO_FACTS).kind).toBe("build");
    const other = pr("opened", { base: { branch: "develop", repository: "acme/app" } });
    expect(reason(decideWebhookEvent(other, filtered(condition), NO_FACTS))).toBe(
      `The pipeline's filter_condition is false for this build: ${condition}`,
    );
  });

  it("sees the source event and action, the tag, labels and the author", () => {
    const condition =
      'build.source == "webhook" && build.source_event == "pull_request" && build.source_action == "opened" && build.pull_request.labels includes "ui" && build.author.name == "ada" && build.tag == null && !build.pull_request.repository.fork';
    expect(decideWebhookEvent(pr("opened"), filtered(condition), NO_FACTS).kind).toBe("build");
    expect(decideWebhookEvent(push("main"), filtered('build.source_event == "push"'), NO_FACTS).kind).toBe("build");
    const tags = pipeline({ build_tags: true, filter_enabled: true, filter_condition: "build.tag =~ /^v/" });
    expect(decideWebhookEvent(tagPush("v3"), tags, NO_FACTS).kind).toBe("build");
  });

  it("is not applied unless filter_enabled", () => {
    expect(decideWebhookEvent(push("main"), pipeline({ filter_condition: "false" }), NO_FACTS).kind).toBe("build");
  });

  it("that cannot be evaluated builds nothing, saying why", () => {
    expect(reason(decideWebhookEvent(push("main"), filtered("build.branch"), NO_FACTS))).toMatch(
      /^The pipeline's filter_condition could not be evaluated: the condition must be true or false/,
    );
  });
});

describe("trigger modes", () => {
  const deployment: DeploymentEvent = {
    kind: "deployment",
    id: "123",
    sha: SHA,
    ref: "main",
    task: "deploy",
    environment: "production",
    description: "",
    payload: '{"x":1}',
    creator: { name: "octocat", email: "" },
  };
  const fork: ForkEvent = { kind: "fork", fork: "someone/app", branch: "main", sender: { name: "someone", email: "" } };

  it("none builds nothing at all", () => {
    for (const event of [push("main"), pr("opened"), deployment, fork]) {
      expect(reason(decideWebhookEvent(event, pipeline({ trigger_mode: "none" }), NO_FACTS))).toBe(
        "The pipeline's trigger_mode is none: no webhook creates builds.",
      );
    }
  });

  it("code builds code events only", () => {
    expect(reason(decideWebhookEvent(deployment, pipeline(), NO_FACTS))).toBe(
      "deployment events create no builds: the pipeline's trigger_mode is code.",
    );
    expect(decideWebhookEvent(fork, pipeline(), NO_FACTS).kind).toBe("nothing");
  });

  it("deployment builds deployments, with their details in the environment, and no pushes", () => {
    const modes = pipeline({ trigger_mode: "deployment" });
    expect(decideWebhookEvent(push("main"), modes, NO_FACTS).kind).toBe("nothing");
    expect(built(decideWebhookEvent(deployment, modes, NO_FACTS))).toEqual({
      commit: SHA,
      branch: "main",
      message: "Deployment of main to production",
      author: { name: "octocat", email: "" },
      tag: null,
      pullRequest: null,
      source: { event: "deployment", action: "created" },
      env: {
        BUILDKITE_GITHUB_DEPLOYMENT_ID: "123",
        BUILDKITE_GITHUB_DEPLOYMENT_TASK: "deploy",
        BUILDKITE_GITHUB_DEPLOYMENT_ENVIRONMENT: "production",
        BUILDKITE_GITHUB_DEPLOYMENT_PAYLOAD: '{"x":1}',
      },
    });
  });

  it("fork builds the default branch's head when the repository is forked", () => {
    expect(built(decideWebhookEvent(fork, pipeline({ trigger_mode: "fork" }), NO_FACTS))).toMatchObject({
      commit: "HEAD",
      branch: "main",
      message: "Forked to someone/app",
      source: { event: "fork", action: "" },
    });
  });

  it("an unknown trigger mode reads as code", () => {
    expect(decideWebhookEvent(push("main"), pipeline({ trigger_mode: "sometimes" }), NO_FACTS).kind).toBe("build");
  });
});

describe("lookupsFor", () => {
  it("asks for the builds of the event's commit, and a branch push's open pull request", () => {
    expect(lookupsFor(push("main"))).toEqual({ commit: SHA, pullRequestBranch: "main" });
    expect(lookupsFor(tagPush("v1"))).toEqual({ commit: SHA, pullRequestBranch: null });
    expect(lookupsFor(push("x", { head: null, deleted: true }))).toEqual({ commit: null, pullRequestBranch: null });
    expect(lookupsFor(pr("opened"))).toEqual({ commit: SHA, pullRequestBranch: null });
  });
});
