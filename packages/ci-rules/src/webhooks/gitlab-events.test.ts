import { parseDelivery } from "./parse-delivery.js";
import type { ParsedDelivery } from "./webhook-event.js";

const parse = (event: string, payload: unknown) => parseDelivery("gitlab", event, JSON.stringify(payload));
const only = (parsed: ParsedDelivery) => {
  if (parsed.kind !== "events" || parsed.events.length !== 1)
    throw new Error(`expected one event: ${JSON.stringify(parsed)}`);
  return parsed.events[0];
};

const SHA = "da1560886d4f094c3e6c9ef40349f7d38b5d27d7";
const project = {
  id: 15,
  path_with_namespace: "mike/diaspora",
  git_http_url: "http://example.com/mike/diaspora.git",
  default_branch: "master",
};

/** A Push Hook as GitLab's documentation shows it, trimmed. */
const push = {
  object_kind: "push",
  before: "95790bf891e76fee5e1747ab589903a6a1f80f22",
  after: SHA,
  ref: "refs/heads/master",
  checkout_sha: SHA,
  user_name: "John Smith",
  user_email: "john@example.com",
  project,
  commits: [
    {
      id: "b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327",
      message: "Update Catalan translation to e38cb41.",
      author: { name: "Jordi Mallach", email: "jordi@softcatala.org" },
    },
    { id: SHA, message: "fixed readme", author: { name: "GitLab dev user", email: "gitlabdev@dv6700.(none)" } },
  ],
};

/** A Merge Request Hook, trimmed, with the fields the rules read. */
const mergeRequest = (attrs: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  object_kind: "merge_request",
  user: { name: "Administrator", username: "root", email: "admin@example.com" },
  project,
  object_attributes: {
    iid: 1,
    title: "MS-Viewport",
    source_branch: "ms-viewport",
    target_branch: "master",
    source_project_id: 14,
    target_project_id: 14,
    state: "opened",
    action: "open",
    draft: false,
    last_commit: { id: SHA, message: "fixed readme", author: { name: "GitLab dev user", email: "gitlabdev@dv6700" } },
    source: {
      path_with_namespace: "awesome_space/awesome_project",
      git_http_url: "http://example.com/awesome_space/awesome_project.git",
    },
    target: { path_with_namespace: "awesome_space/awesome_project" },
    ...attrs,
  },
  labels: [{ title: "API" }],
  ...extra,
});

describe("GitLab deliveries", () => {
  it("reads a Push Hook's branch and the pushed commit from the commit list", () => {
    expect(only(parse("Push Hook", push))).toEqual({
      kind: "push",
      ref: { type: "branch", name: "master" },
      head: {
        sha: SHA,
        message: "fixed readme",
        author: { name: "GitLab dev user", email: "gitlabdev@dv6700.(none)" },
      },
      deleted: false,
    });
  });

  it("reads a push of a commit it does not list as the pusher's, without a message", () => {
    expect(only(parse("Push Hook", { ...push, commits: [] }))).toMatchObject({
      head: { sha: SHA, message: "", author: { name: "John Smith", email: "john@example.com" } },
    });
  });

  it("reads a deleted branch (after is all zeros)", () => {
    expect(only(parse("Push Hook", { ...push, after: "0".repeat(40), checkout_sha: null, commits: [] }))).toEqual({
      kind: "push",
      ref: { type: "branch", name: "master" },
      head: null,
      deleted: true,
    });
  });

  it("reads a Tag Push Hook as a tag push", () => {
    const tag = { ...push, object_kind: "tag_push", ref: "refs/tags/v1.0.0", message: "Release", commits: [] };
    expect(only(parse("Tag Push Hook", tag))).toMatchObject({
      ref: { type: "tag", name: "v1.0.0" },
      head: { sha: SHA, message: "Release" },
    });
  });

  it("reads events that came through a System Hook by their object_kind", () => {
    expect(only(parse("System Hook", push))).toMatchObject({ kind: "push" });
    expect(parse("System Hook", { object_kind: "repository_update" }).kind).toBe("ignored");
  });

  it("reads an opened merge request", () => {
    expect(only(parse("Merge Request Hook", mergeRequest()))).toEqual({
      kind: "pull_request",
      action: "opened",
      number: "1",
      title: "MS-Viewport",
      draft: false,
      labels: ["API"],
      head: {
        branch: "ms-viewport",
        sha: SHA,
        repository: "awesome_space/awesome_project",
        owner: "awesome_space",
        cloneUrl: "http://example.com/awesome_space/awesome_project.git",
      },
      base: { branch: "master", repository: "awesome_space/awesome_project" },
      fork: false,
      message: "fixed readme",
      author: { name: "GitLab dev user", email: "gitlabdev@dv6700" },
    });
  });

  it.each([
    ["reopen", {}, "reopened"],
    ["close", {}, "closed"],
    ["merge", {}, "closed"],
    ["update", { oldrev: "95790bf8" }, "synchronize"],
    ["approved", {}, { other: "approved" }],
  ] as const)("reads the action %s (%j) as %j", (action, attrs, expected) => {
    expect(only(parse("Merge Request Hook", mergeRequest({ action, ...attrs })))).toMatchObject({ action: expected });
  });

  it("tells updates apart by what changed: draft state, labels, or something else", () => {
    const update = (changes: Record<string, unknown>) =>
      only(parse("Merge Request Hook", mergeRequest({ action: "update" }, { changes })));
    expect(update({ draft: { previous: true, current: false } })).toMatchObject({ action: "ready_for_review" });
    expect(update({ draft: { previous: false, current: true } })).toMatchObject({ action: "converted_to_draft" });
    expect(update({ labels: { previous: [], current: [{ title: "API" }] } })).toMatchObject({ action: "labeled" });
    // GitLab repeats unchanged labels in some updates' changes: no label change.
    expect(
      update({
        labels: { previous: [{ title: "API" }], current: [{ title: "API" }] },
        title: { previous: "a", current: "b" },
      }),
    ).toMatchObject({ action: "edited" });
    expect(update({})).toMatchObject({ action: "edited" });
  });

  it("reads a merge request from another project as a fork's", () => {
    const fork = mergeRequest({
      source_project_id: 99,
      source: { path_with_namespace: "someone/awesome_project", git_http_url: "http://example.com/someone/x.git" },
    });
    expect(only(parse("Merge Request Hook", fork))).toMatchObject({ fork: true, head: { owner: "someone" } });
  });

  it("says what is missing, and builds nothing from other events", () => {
    expect(parse("Merge Request Hook", mergeRequest({ source_branch: undefined }))).toEqual({
      kind: "invalid",
      problem: "object_attributes.source_branch must be a string",
    });
    expect(parse("Note Hook", {})).toEqual({ kind: "ignored", reason: 'GitLab "Note Hook" events build nothing.' });
  });
});
