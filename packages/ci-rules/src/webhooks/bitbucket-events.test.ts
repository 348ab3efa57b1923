import { parseDelivery } from "./parse-delivery.js";

const parse = (event: string, payload: unknown) => parseDelivery("bitbucket", event, JSON.stringify(payload));

const change = (type: string, name: string, hash: string, extra: Record<string, unknown> = {}) => ({
  new: {
    type,
    name,
    target: { hash, message: "Add a thing\n", author: { raw: "Ada Lovelace <ada@example.com>" } },
  },
  old: null,
  created: true,
  closed: false,
  ...extra,
});

const pullRequest = (source: string, extra: Record<string, unknown> = {}) => ({
  pullrequest: {
    id: 12,
    title: "Make it faster",
    author: { display_name: "Ada Lovelace" },
    source: {
      branch: { name: "speed" },
      commit: { hash: "1a2b3c4d5e6f" },
      repository: { full_name: source, links: { html: { href: `https://bitbucket.org/${source}` } } },
    },
    destination: { branch: { name: "main" }, repository: { full_name: "acme/app" } },
    ...extra,
  },
  repository: { full_name: "acme/app" },
});

describe("Bitbucket Cloud deliveries", () => {
  it("reads each ref a push changed as its own push", () => {
    const parsed = parse("repo:push", {
      push: {
        changes: [
          change("branch", "main", "aaa111"),
          change("annotated_tag", "v1", "bbb222"),
          { new: null, old: { type: "branch", name: "old-work", target: { hash: "ccc" } }, closed: true },
        ],
      },
    });
    expect(parsed).toEqual({
      kind: "events",
      events: [
        {
          kind: "push",
          ref: { type: "branch", name: "main" },
          head: { sha: "aaa111", message: "Add a thing\n", author: { name: "Ada Lovelace", email: "ada@example.com" } },
          deleted: false,
        },
        expect.objectContaining({ ref: { type: "tag", name: "v1" }, deleted: false }),
        { kind: "push", ref: { type: "branch", name: "old-work" }, head: null, deleted: true },
      ],
    });
  });

  it("reads an author Bitbucket knows only by display name", () => {
    const parsed = parse("repo:push", {
      push: {
        changes: [
          change("branch", "main", "aaa", {
            new: { type: "branch", name: "main", target: { hash: "aaa", author: { user: { display_name: "Ada" } } } },
          }),
        ],
      },
    });
    expect(parsed).toMatchObject({ events: [{ head: { author: { name: "Ada", email: "" } } }] });
  });

  it("builds nothing from a push that changed no branch or tag", () => {
    expect(parse("repo:push", { push: { changes: [] } }).kind).toBe("ignored");
  });

  it.each([
    ["pullrequest:created", "opened"],
    ["pullrequest:updated", "synchronize"],
    ["pullrequest:fulfilled", "closed"],
    ["pullrequest:rejected", "closed"],
  ])("reads %s as %s", (event, action) => {
    expect(parse(event, pullRequest("acme/app"))).toEqual({
      kind: "events",
      events: [
        {
          kind: "pull_request",
          action,
          number: "12",
          title: "Make it faster",
          draft: null,
          labels: [],
          head: {
            branch: "speed",
            sha: "1a2b3c4d5e6f",
            repository: "acme/app",
            owner: "acme",
            cloneUrl: "https://bitbucket.org/acme/app",
          },
          base: { branch: "main", repository: "acme/app" },
          fork: false,
          message: "",
          author: { name: "Ada Lovelace", email: "" },
        },
      ],
    });
  });

  it("reads a pull request from another repository as a fork's, and its draft flag when given", () => {
    expect(parse("pullrequest:created", pullRequest("ada/app", { draft: true }))).toMatchObject({
      events: [{ fork: true, draft: true, head: { owner: "ada" } }],
    });
  });

  it("says what is missing, and builds nothing from other events", () => {
    expect(parse("repo:push", {})).toEqual({ kind: "invalid", problem: "push must be an object" });
    expect(parse("issue:created", {}).kind).toBe("ignored");
  });
});
