import { parseDelivery } from "./parse-delivery.js";

const parse = (event: string, payload: unknown) => parseDelivery("gitea", event, JSON.stringify(payload));

const SHA = "28e1879d029cb852e4844d9c718537df08844e03";
const repository = { full_name: "gitea/webhooks", clone_url: "http://localhost:3000/gitea/webhooks.git" };

const pullRequest = (action: string) => ({
  action,
  number: 4,
  pull_request: {
    number: 4,
    title: "Add a feature",
    user: { login: "gitea", username: "gitea", email: "gitea@example.com" },
    labels: [{ name: "feature" }],
    head: { ref: "feature", sha: SHA, repo: { ...repository, owner: { login: "gitea", username: "gitea" } } },
    base: { ref: "main", sha: "0000", repo: repository },
  },
  repository,
});

describe("Gitea and Forgejo deliveries", () => {
  it("reads a push from its head commit", () => {
    const payload = {
      ref: "refs/heads/main",
      before: "0".repeat(40),
      after: SHA,
      head_commit: { id: SHA, message: "Add a file\n", author: { name: "Ada", email: "ada@example.com" } },
      commits: [],
      repository,
      pusher: { login: "ada", full_name: "Ada L" },
    };
    expect(parse("push", payload)).toEqual({
      kind: "events",
      events: [
        {
          kind: "push",
          ref: { type: "branch", name: "main" },
          head: { sha: SHA, message: "Add a file\n", author: { name: "Ada", email: "ada@example.com" } },
          deleted: false,
        },
      ],
    });
  });

  it("reads a push without a head commit as the pusher's, and an all-zero after as a deletion", () => {
    expect(parse("push", { ref: "refs/tags/v1", after: SHA, pusher: { login: "ada" } })).toMatchObject({
      events: [{ ref: { type: "tag", name: "v1" }, head: { sha: SHA, message: "", author: { name: "ada" } } }],
    });
    expect(parse("push", { ref: "refs/heads/x", after: "0".repeat(40) })).toMatchObject({
      events: [{ deleted: true, head: null }],
    });
  });

  it("reads delete events as pushes that deleted the ref, and builds nothing from create events", () => {
    expect(parse("delete", { ref: "feature", ref_type: "branch", sha: SHA })).toEqual({
      kind: "events",
      events: [{ kind: "push", ref: { type: "branch", name: "feature" }, head: null, deleted: true }],
    });
    expect(parse("create", { ref: "feature", ref_type: "branch" }).kind).toBe("ignored");
  });

  it.each([
    ["pull_request", "opened", "opened"],
    ["pull_request", "reopened", "reopened"],
    ["pull_request", "closed", "closed"],
    ["pull_request_sync", "synchronized", "synchronize"],
    ["pull_request_label", "label_updated", "labeled"],
    ["pull_request_label", "label_cleared", "unlabeled"],
    ["pull_request_assign", "assigned", { other: "assigned" }],
  ] as const)("reads %s %s as %j", (event, action, expected) => {
    expect(parse(event, pullRequest(action))).toMatchObject({
      events: [
        {
          kind: "pull_request",
          action: expected,
          number: "4",
          labels: ["feature"],
          head: { branch: "feature", sha: SHA, owner: "gitea", cloneUrl: repository.clone_url },
          base: { branch: "main", repository: "gitea/webhooks" },
          fork: false,
          author: { name: "gitea", email: "gitea@example.com" },
        },
      ],
    });
  });

  it("says what is missing, and builds nothing from other events", () => {
    expect(parse("delete", { ref: "x", ref_type: "note" })).toEqual({
      kind: "invalid",
      problem: 'ref_type must be branch or tag, got "note"',
    });
    expect(parse("issues", {}).kind).toBe("ignored");
  });
});
