import { Role } from "@conveyor/proto/identity";
import { arrangeCluster, arrangeOrgUser, send } from "../support/stack-env.js";
import { arrangeHookedPipeline, buildsOf, deliver, githubExamples, type HookedPipeline } from "../support/webhooks.js";

// Every example payload GitHub publishes (@octokit/webhooks-examples), delivered to a pipeline with Buildkite's
// default settings and to one with tags, label changes and readiness built: none may answer 5xx, each is answered
// 200 (an event nothing builds says why), and the pushes, pull requests and create/delete events give exactly the
// builds the provider settings say (docs/webhooks.md#what-builds).

const SCOPES = ["read_builds", "read_pipelines", "write_pipelines", "read_job_env"];
const MASTER = "6113728f27ae82c7b1a177c8d03f9e96e0adf246";
const CHANGES = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let defaults: HookedPipeline;
let everything: HookedPipeline;
const answers = new Map<HookedPipeline, Array<{ event: string; status: number; body: Json }>>();

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  const clusterId = await arrangeCluster(org.organization.id);
  const arrange = (settings?: Record<string, unknown>) =>
    arrangeHookedPipeline({ orgSlug: org.organization.slug, token: org.secret, clusterId, settings });
  defaults = await arrange();
  everything = await arrange({
    build_tags: true,
    build_pull_request_labels_changed: true,
    build_pull_request_ready_for_review: true,
    cancel_deleted_branch_builds: true,
  });
  for (const pipeline of [defaults, everything]) {
    const got: Array<{ event: string; status: number; body: Json }> = [];
    let n = 0;
    for (const { name, examples } of githubExamples()) {
      for (const example of examples) {
        n += 1;
        const headers = { "x-github-event": name, "x-github-delivery": `example-${n}` };
        got.push({ event: name, ...(await deliver(pipeline.webhookUrl, headers, JSON.stringify(example))) });
      }
    }
    answers.set(pipeline, got);
  }
}, 240_000);

/** A build as these assertions compare it. */
const summary = (b: Json) => ({
  branch: b.branch,
  commit: b.commit,
  pull_request: b.pull_request?.id ?? null,
});

describe("GitHub's example payloads", () => {
  it("are all delivered, and none is answered with a server error", () => {
    const got = answers.get(defaults) ?? [];
    expect(got.length).toBeGreaterThan(300);
    for (const pipeline of [defaults, everything]) {
      const failed = (answers.get(pipeline) ?? []).filter((a) => a.status !== 200);
      expect(failed).toEqual([]);
    }
  });

  it("say why each event that built nothing built nothing", () => {
    const issues = (answers.get(defaults) ?? []).find((a) => a.event === "issues");
    expect(issues?.body).toEqual({
      message: "Received: nothing to build.",
      redelivery: false,
      builds: [],
      canceled_builds: 0,
      reasons: ['GitHub "issues" events build nothing.'],
    });
    const ping = (answers.get(defaults) ?? []).find((a) => a.event === "ping");
    expect(ping?.body.reasons).toEqual(["Pong: deliveries to this URL reach the pipeline."]);
  });

  it("build, with the default settings, the pull request once and both pushes to master", async () => {
    const built = await buildsOf(defaults, org.secret);
    expect(built.map(summary)).toEqual([
      // The first "opened": the later ones (and "reopened") are the same commit on the same branch, which
      // skip_pull_request_builds_for_existing_commits skips; "synchronize" of a branch of the repository is left to
      // its push; labels, readiness and the rest are not built.
      { branch: "changes", commit: CHANGES, pull_request: "2" },
      { branch: "master", commit: MASTER, pull_request: null },
      { branch: "master", commit: MASTER, pull_request: null },
    ]);
    // No tag push is built (build_tags is off), and no create, delete, deployment or fork event builds.
    const [pr, push] = built;
    expect(pr).toMatchObject({
      source: "webhook",
      message: "Update the README with new information.",
      creator: null,
      author: { name: "Codertocat", email: "" },
      pull_request: { id: "2", base: "master", repository: "https://github.com/Codertocat/Hello-World.git" },
    });
    expect(push).toMatchObject({
      source: "webhook",
      message: "Initial commit",
      author: { name: "Codertocat", email: "21031067+Codertocat@users.noreply.github.com" },
      creator: null,
    });
  });

  it("build, with tags, labels and readiness on, the tag and every label change and readiness too", async () => {
    const built = await buildsOf(everything, org.secret);
    const pr = { branch: "changes", commit: CHANGES, pull_request: "2" };
    const master = { branch: "master", commit: MASTER, pull_request: null };
    expect(built.map(summary)).toEqual([
      // In the examples' order: opened, labeled ×2, ready_for_review ×3, unlabeled ×2; then the pushes: the tag
      // simple-tag (its deletions build nothing) and master twice.
      pr,
      pr,
      pr,
      pr,
      pr,
      pr,
      pr,
      pr,
      { branch: "simple-tag", commit: MASTER, pull_request: null },
      master,
      master,
    ]);
    const jobEnv = async (build: Json) => {
      const res = await send("GET", `${everything.builds}/${build.number}/jobs/${build.jobs[0].id}/env`, org.secret);
      expect(res.status).toBe(200);
      return res.body.env;
    };
    const tag = built[8];
    expect(await jobEnv(tag)).toMatchObject({
      BUILDKITE_TAG: "simple-tag",
      BUILDKITE_BRANCH: "simple-tag",
      BUILDKITE_SOURCE: "webhook",
      BUILDKITE_PULL_REQUEST: "false",
    });
    const labeled = built[1];
    expect(await jobEnv(labeled)).toMatchObject({
      BUILDKITE_PULL_REQUEST: "2",
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: "master",
      BUILDKITE_PULL_REQUEST_REPO: "https://github.com/Codertocat/Hello-World.git",
      BUILDKITE_PULL_REQUEST_LABELS: "bug",
      BUILDKITE_PULL_REQUEST_DRAFT: "false",
      BUILDKITE_BUILD_AUTHOR: "Codertocat",
    });
  });

  it("answer a redelivery with what the first delivery did, building nothing again", async () => {
    const before = (await buildsOf(defaults, org.secret)).length;
    const push = githubExamples()
      .find((d) => d.name === "push")
      ?.examples.find((e: Json) => e.ref === "refs/heads/master");
    const res = await deliver(
      defaults.webhookUrl,
      { "x-github-event": "push", "x-github-delivery": "again" },
      JSON.stringify(push),
    );
    const again = await deliver(
      defaults.webhookUrl,
      { "x-github-event": "push", "x-github-delivery": "again" },
      JSON.stringify(push),
    );
    expect(res.status).toBe(200);
    expect(again).toEqual({
      status: 200,
      body: { ...res.body, message: "Received before: nothing was done again.", redelivery: true },
    });
    expect(await buildsOf(defaults, org.secret)).toHaveLength(before + 1);
  });
});
