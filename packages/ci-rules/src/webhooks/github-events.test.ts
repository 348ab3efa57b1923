import { readFileSync } from "node:fs";
import { parseDelivery } from "./parse-delivery.js";
import type { ParsedDelivery, PullRequestEvent, PushEvent } from "./webhook-event.js";

/** GitHub's own example payloads: @octokit/webhooks-examples's main file is every event's examples, as JSON. */
const examples = JSON.parse(readFileSync(require.resolve("@octokit/webhooks-examples"), "utf8")) as Array<{
  name: string;
  examples: unknown[];
}>;
const byName = new Map(examples.map((definition) => [definition.name, definition.examples]));
const examplesOf = (name: string): unknown[] => {
  const found = byName.get(name);
  if (!found || found.length === 0) throw new Error(`@octokit/webhooks-examples has no ${name} examples`);
  return found;
};
const parse = (event: string, payload: unknown) => parseDelivery("github", event, JSON.stringify(payload));
const eventsOf = (parsed: ParsedDelivery) => {
  if (parsed.kind !== "events") throw new Error(`expected events, got ${JSON.stringify(parsed)}`);
  return parsed.events;
};

describe("GitHub's example payloads", () => {
  const all = examples.flatMap((definition) =>
    definition.examples.map((payload, i): [string, string, unknown] => [
      `${definition.name} #${i}`,
      definition.name,
      payload,
    ]),
  );

  it("are there to run", () => {
    expect(all.length).toBeGreaterThan(300);
  });

  it.each(all)("%s parses without a problem", (_label, name, payload) => {
    const parsed = parse(name, payload);
    expect(parsed.kind).not.toBe("invalid");
  });

  it("reads every push: the ref, the head commit, and deletions", () => {
    const pushes = examplesOf("push").map((p) => eventsOf(parse("push", p))[0] as PushEvent);
    const created = pushes.filter((p) => !p.deleted);
    const deleted = pushes.filter((p) => p.deleted);
    expect(created.length).toBeGreaterThan(0);
    expect(deleted.length).toBeGreaterThan(0);
    for (const push of deleted) expect(push.head).toBeNull();
    const master = created.find((p) => p.ref.type === "branch");
    expect(master).toEqual({
      kind: "push",
      ref: { type: "branch", name: "master" },
      head: {
        sha: "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
        message: "Initial commit",
        author: { name: "Codertocat", email: "21031067+Codertocat@users.noreply.github.com" },
      },
      deleted: false,
    });
    const tag = created.find((p) => p.ref.type === "tag");
    expect(tag?.ref).toEqual({ type: "tag", name: "simple-tag" });
    expect(tag?.head?.sha).toBe("6113728f27ae82c7b1a177c8d03f9e96e0adf246");
  });

  it("reads every pull request event's action, number, branches, labels and draft state", () => {
    const prs = examplesOf("pull_request").map((p) => eventsOf(parse("pull_request", p))[0] as PullRequestEvent);
    const opened = prs.find((p) => p.action === "opened" && p.labels.length === 0);
    expect(opened).toEqual({
      kind: "pull_request",
      action: "opened",
      number: "2",
      title: "Update the README with new information.",
      draft: false,
      labels: [],
      head: {
        branch: "changes",
        sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        repository: "Codertocat/Hello-World",
        owner: "Codertocat",
        cloneUrl: "https://github.com/Codertocat/Hello-World.git",
      },
      base: { branch: "master", repository: "Codertocat/Hello-World" },
      fork: false,
      message: "",
      author: { name: "Codertocat", email: "" },
    });
    expect(prs.find((p) => p.action === "labeled")?.labels).toEqual(["bug"]);
    expect(prs.filter((p) => p.action === "converted_to_draft").every((p) => p.draft === true)).toBe(true);
    expect(prs.find((p) => p.action === "synchronize")).toBeDefined();
    // Actions the rules do not tell apart keep GitHub's name.
    expect(prs.find((p) => typeof p.action !== "string")?.action).toEqual({ other: "assigned" });
  });

  it("reads delete events as pushes that deleted the ref, and builds nothing from create events", () => {
    for (const payload of examplesOf("delete")) {
      const [push] = eventsOf(parse("delete", payload)) as PushEvent[];
      expect(push).toMatchObject({ kind: "push", head: null, deleted: true });
    }
    for (const payload of examplesOf("create")) expect(parse("create", payload).kind).toBe("ignored");
  });

  it("reads deployments and forks", () => {
    const [deployment] = eventsOf(parse("deployment", examplesOf("deployment")[0]));
    expect(deployment).toMatchObject({ kind: "deployment", ref: "master", environment: "production" });
    expect(deployment?.kind === "deployment" && deployment.sha).toMatch(/^[0-9a-f]{40}$/);
    const [fork] = eventsOf(parse("fork", examplesOf("fork")[0]));
    expect(fork).toMatchObject({ kind: "fork", branch: "master" });
  });

  it("answers pings as pings", () => {
    for (const payload of examplesOf("ping")) expect(parse("ping", payload)).toEqual({ kind: "ping" });
  });
});

describe("GitHub payloads the examples do not cover", () => {
  const pr = (head: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    action: "synchronize",
    number: 7,
    pull_request: {
      number: 7,
      title: "Fix it",
      draft: false,
      labels: [{ name: "ok" }],
      user: { login: "someone" },
      head: { ref: "main", sha: "abc123", ...head },
      base: { ref: "main", repo: { full_name: "acme/app" } },
      ...extra,
    },
  });

  it("tells a fork's pull request by its head repository, and keeps its owner for the branch prefix", () => {
    const [event] = eventsOf(
      parse("pull_request", pr({ repo: { full_name: "someone/app", owner: { login: "someone" }, clone_url: "u" } })),
    );
    expect(event).toMatchObject({ fork: true, head: { owner: "someone", repository: "someone/app", cloneUrl: "u" } });
  });

  it("reads a pull request whose fork was deleted (no head repository) as a fork", () => {
    const [event] = eventsOf(parse("pull_request", pr({ repo: null, user: { login: "gone" } })));
    expect(event).toMatchObject({ fork: true, head: { repository: "", owner: "gone" } });
  });

  it("takes the head repository's name case-insensitively", () => {
    const [event] = eventsOf(parse("pull_request", pr({ repo: { full_name: "ACME/App" } })));
    expect(event).toMatchObject({ fork: false });
  });

  it("reads a push without a head commit from its after sha", () => {
    const [event] = eventsOf(parse("push", { ref: "refs/heads/new", after: "f00d", head_commit: null }));
    expect(event).toEqual({
      kind: "push",
      ref: { type: "branch", name: "new" },
      head: { sha: "f00d", message: "", author: null },
      deleted: false,
    });
  });

  it("reads a push whose after sha is all zeros as a deletion", () => {
    const [event] = eventsOf(parse("push", { ref: "refs/heads/gone", after: "0".repeat(40) }));
    expect(event).toMatchObject({ deleted: true, head: null });
  });

  it("builds nothing from a push to a ref that is neither a branch nor a tag", () => {
    expect(parse("push", { ref: "refs/notes/commits", after: "f00d" })).toEqual({
      kind: "ignored",
      reason: "A push to refs/notes/commits is neither a branch nor a tag: nothing to build.",
    });
  });

  it("says which field is missing or of the wrong type", () => {
    expect(parse("push", { after: "f00d" })).toEqual({ kind: "invalid", problem: "ref must be a string" });
    expect(parse("pull_request", { action: "opened", number: 1, pull_request: { head: {} } })).toEqual({
      kind: "invalid",
      problem: "pull_request.base must be an object",
    });
    expect(parse("pull_request", pr({ repo: { full_name: { name: "app" } } }))).toEqual({
      kind: "invalid",
      problem: "pull_request.head.repo.full_name must be a string",
    });
    expect(parse("push", [1, 2])).toEqual({ kind: "invalid", problem: "the payload must be a JSON object" });
  });

  it("builds nothing from events it does not read, saying which", () => {
    expect(parse("issues", {})).toEqual({ kind: "ignored", reason: 'GitHub "issues" events build nothing.' });
    expect(parse("merge_group", {}).kind).toBe("ignored");
  });
});
