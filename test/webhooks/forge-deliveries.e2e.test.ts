import { createHmac } from "node:crypto";
import { Role } from "@conveyor/proto/identity";
import { arrangeCluster, arrangeOrgUser, send } from "../support/stack-env.js";
import { arrangeHookedPipeline, buildsOf, deliver, type HookedPipeline } from "../support/webhooks.js";

// Deliveries from each forge through the whole stack (docs/webhooks.md): the webhook secret set over REST and checked
// on each forge's signature, builds made as the provider settings say with what the agent and conditionals see of
// them, a redelivery building nothing, a deleted branch's builds canceled, and a rebuild keeping the pull request.

const SCOPES = ["read_builds", "write_builds", "read_pipelines", "write_pipelines", "read_job_env"];
const SECRET = "It's a Secret to Everybody";
const SHA = (n: number) => String(n).repeat(40).slice(0, 40);

// A step for every build, one only for pull requests, one only for builds of pull requests labelled "bug".
const STEPS = `steps:
  - label: always
    command: "true"
  - label: pull requests
    command: "true"
    if: build.source_event == "pull_request" && build.source_action == "opened"
  - label: bugs
    command: "true"
    if: build.pull_request.labels includes "bug"
`;

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  clusterId = await arrangeCluster(org.organization.id);
});

const hooked = (settings?: Record<string, unknown>, branchConfiguration?: string) =>
  arrangeHookedPipeline({
    orgSlug: org.organization.slug,
    token: org.secret,
    clusterId,
    configuration: STEPS,
    ...(settings ? { settings } : {}),
    ...(branchConfiguration ? { branchConfiguration } : {}),
  });
const hmac = (body: string) => createHmac("sha256", SECRET).update(body).digest("hex");
const jobEnv = async (pipeline: HookedPipeline, build: Json) => {
  const res = await send("GET", `${pipeline.builds}/${build.number}/jobs/${build.jobs[0].id}/env`, org.secret);
  expect(res.status).toBe(200);
  return res.body.env;
};
/** A build's jobs by label: their states (a conditional that was false leaves its job broken). */
const jobStates = (build: Json) => Object.fromEntries(build.jobs.map((j: Json) => [j.name ?? j.label, j.state]));

/** A GitLab merge request, opened, from branch `feature` of the same project. */
const mergeRequest = (labels: string[]) =>
  JSON.stringify({
    object_kind: "merge_request",
    user: { name: "Ada Lovelace", username: "ada", email: "ada@example.com" },
    project: { id: 1, path_with_namespace: "acme/app", git_http_url: "https://gitlab.example.com/acme/app.git" },
    object_attributes: {
      iid: 7,
      title: "Make it faster",
      action: "open",
      state: "opened",
      draft: false,
      source_branch: "feature",
      target_branch: "main",
      source_project_id: 1,
      target_project_id: 1,
      last_commit: { id: SHA(7), message: "Faster\n", author: { name: "Ada Lovelace", email: "ada@example.com" } },
      source: { path_with_namespace: "acme/app", git_http_url: "https://gitlab.example.com/acme/app.git" },
      target: { path_with_namespace: "acme/app" },
    },
    labels: labels.map((title) => ({ title })),
  });

describe("a pipeline with a webhook secret", () => {
  let pipeline: HookedPipeline;

  beforeAll(async () => {
    pipeline = await hooked();
    const path = `/v2/organizations/${org.organization.slug}/pipelines/${pipeline.slug}`;
    const res = await send("PATCH", path, org.secret, { provider_settings: { webhook_secret: SECRET } });
    expect(res.status).toBe(200);
    // Those who may edit the pipeline see the secret, beside the webhook URL.
    expect(res.body.provider.settings.webhook_secret).toBe(SECRET);
  });

  it("builds a GitLab merge request whose X-Gitlab-Token is the secret, with what the agent and conditionals see", async () => {
    const headers = { "x-gitlab-event": "Merge Request Hook", "x-gitlab-event-uuid": "mr-7" };
    const unsigned = await deliver(pipeline.webhookUrl, headers, mergeRequest(["bug"]));
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.message).toContain("X-Gitlab-Token");
    const wrong = await deliver(pipeline.webhookUrl, { ...headers, "x-gitlab-token": "guess" }, mergeRequest(["bug"]));
    expect(wrong.status).toBe(401);
    expect(await buildsOf(pipeline, org.secret)).toEqual([]);

    const res = await deliver(pipeline.webhookUrl, { ...headers, "x-gitlab-token": SECRET }, mergeRequest(["bug"]));
    expect(res.status).toBe(200);
    expect(res.body.builds).toHaveLength(1);
    const [build] = await buildsOf(pipeline, org.secret);
    expect(build).toMatchObject({
      number: res.body.builds[0].number,
      source: "webhook",
      branch: "feature",
      commit: SHA(7),
      message: "Faster\n",
      creator: null,
      author: { name: "Ada Lovelace", email: "ada@example.com" },
      pull_request: { id: "7", base: "main", repository: "https://gitlab.example.com/acme/app.git" },
    });
    expect(jobStates(build)).toEqual({ always: "scheduled", "pull requests": "scheduled", bugs: "scheduled" });
    expect(await jobEnv(pipeline, build)).toMatchObject({
      BUILDKITE_SOURCE: "webhook",
      BUILDKITE_BRANCH: "feature",
      BUILDKITE_COMMIT: SHA(7),
      BUILDKITE_PULL_REQUEST: "7",
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: "main",
      BUILDKITE_PULL_REQUEST_REPO: "https://gitlab.example.com/acme/app.git",
      BUILDKITE_PULL_REQUEST_LABELS: "bug",
      BUILDKITE_PULL_REQUEST_DRAFT: "false",
      BUILDKITE_BUILD_AUTHOR: "Ada Lovelace",
      BUILDKITE_BUILD_AUTHOR_EMAIL: "ada@example.com",
    });

    // A rebuild replays the pull request, its labels included.
    const rebuilt = await send("PUT", `${pipeline.builds}/${build.number}/rebuild`, org.secret);
    expect(rebuilt.status).toBe(200);
    expect(rebuilt.body.pull_request).toEqual(build.pull_request);
    expect(await jobEnv(pipeline, rebuilt.body)).toMatchObject({
      BUILDKITE_PULL_REQUEST: "7",
      BUILDKITE_PULL_REQUEST_LABELS: "bug",
    });
  });

  it("builds Gitea pushes signed with the secret once, whatever is redelivered", async () => {
    const body = JSON.stringify({
      ref: "refs/heads/main",
      after: SHA(1),
      head_commit: { id: SHA(1), message: "Add a file\n", author: { name: "Grace", email: "grace@example.com" } },
    });
    const headers = { "x-gitea-event": "push", "x-gitea-delivery": "gitea-1", "x-gitea-signature": hmac(body) };
    const first = await deliver(pipeline.webhookUrl, headers, body);
    expect(first.status).toBe(200);
    const again = await deliver(pipeline.webhookUrl, headers, body);
    expect(again.body).toMatchObject({ redelivery: true, builds: first.body.builds });
    const tampered = await deliver(pipeline.webhookUrl, headers, body.replace("Add", "Remove"));
    expect(tampered.status).toBe(401);
    const pushes = (await buildsOf(pipeline, org.secret)).filter((b: Json) => b.commit === SHA(1));
    expect(pushes).toHaveLength(1);
    // Neither the pull request step nor the bug step runs for a push.
    expect(jobStates(pushes[0])).toEqual({ always: "scheduled", "pull requests": "broken", bugs: "broken" });
  });
});

describe("provider settings", () => {
  it("build each ref a Bitbucket push moved, tags with build_tags, and the tag's name as BUILDKITE_TAG", async () => {
    const pipeline = await hooked({ build_tags: true });
    const change = (type: string, name: string, hash: string) => ({
      new: { type, name, target: { hash, message: `${name}\n`, author: { raw: "Grace Hopper <grace@example.com>" } } },
      old: null,
    });
    const body = JSON.stringify({
      push: { changes: [change("branch", "main", SHA(2)), change("tag", "v1.0", SHA(2))] },
    });
    const res = await deliver(pipeline.webhookUrl, { "x-event-key": "repo:push", "x-request-uuid": "bb-1" }, body);
    expect(res.status).toBe(200);
    expect(res.body.message).toBe("Received: 2 builds created.");
    const [main, tag] = await buildsOf(pipeline, org.secret);
    expect(main).toMatchObject({ branch: "main", author: { name: "Grace Hopper", email: "grace@example.com" } });
    expect(await jobEnv(pipeline, tag)).toMatchObject({ BUILDKITE_TAG: "v1.0", BUILDKITE_BRANCH: "v1.0" });
    expect((await jobEnv(pipeline, main)).BUILDKITE_TAG).toBeUndefined();
  });

  it("follow the branch filter, skip markers and the filter condition, saying why nothing was built", async () => {
    const pipeline = await hooked(
      { filter_enabled: true, filter_condition: "build.message !~ /^WIP/" },
      "main release/*",
    );
    const push = (branch: string, message: string, n: number) =>
      deliver(
        pipeline.webhookUrl,
        { "x-github-event": "push", "x-github-delivery": `f-${n}` },
        JSON.stringify({ ref: `refs/heads/${branch}`, after: SHA(n), head_commit: { id: SHA(n), message } }),
      );
    expect((await push("feature", "Fix", 3)).body.reasons).toEqual([
      'Branch "feature" does not match the pipeline\'s branch filter "main release/*".',
    ]);
    expect((await push("main", "Docs [skip ci]", 4)).body.reasons).toEqual([
      "The commit message says [skip ci]: not built.",
    ]);
    expect((await push("main", "WIP: half done", 5)).body.reasons).toEqual([
      "The pipeline's filter_condition is false for this build: build.message !~ /^WIP/",
    ]);
    expect((await push("release/1.0", "Release", 6)).body.builds).toHaveLength(1);
    expect((await buildsOf(pipeline, org.secret)).map((b: Json) => b.branch)).toEqual(["release/1.0"]);
  });

  it("cancel a deleted branch's unfinished builds with cancel_deleted_branch_builds", async () => {
    const pipeline = await hooked({ cancel_deleted_branch_builds: true });
    const github = (event: string, n: number) => ({ "x-github-event": event, "x-github-delivery": `c-${n}` });
    await deliver(pipeline.webhookUrl, github("push", 1), JSON.stringify({ ref: "refs/heads/doomed", after: SHA(8) }));
    await deliver(pipeline.webhookUrl, github("push", 2), JSON.stringify({ ref: "refs/heads/kept", after: SHA(9) }));
    const deleted = await deliver(
      pipeline.webhookUrl,
      github("push", 3),
      JSON.stringify({ ref: "refs/heads/doomed", before: SHA(8), after: "0".repeat(40), deleted: true }),
    );
    expect(deleted.body).toMatchObject({ message: "Received: 1 build canceled.", canceled_builds: 1 });
    const states = Object.fromEntries((await buildsOf(pipeline, org.secret)).map((b: Json) => [b.branch, b.state]));
    expect(states).toEqual({ doomed: "canceled", kept: "scheduled" });
  });

  it("build nothing at all with trigger_mode none", async () => {
    const pipeline = await hooked({ trigger_mode: "none" });
    const res = await deliver(
      pipeline.webhookUrl,
      { "x-github-event": "push", "x-github-delivery": "n-1" },
      JSON.stringify({ ref: "refs/heads/main", after: SHA(1) }),
    );
    expect(res.body.reasons).toEqual(["The pipeline's trigger_mode is none: no webhook creates builds."]);
    expect(await buildsOf(pipeline, org.secret)).toEqual([]);
  });
});

describe("what is not a delivery", () => {
  it("gets a 4xx saying what was wrong, and creates nothing", async () => {
    const pipeline = await hooked();
    const push = JSON.stringify({ ref: "refs/heads/main", after: SHA(1) });
    const unknown = await deliver(
      pipeline.webhookUrl.replace(/[^/]+$/, "0".repeat(48)),
      { "x-github-event": "push" },
      push,
    );
    expect(unknown.status).toBe(404);
    const noForge = await deliver(pipeline.webhookUrl, {}, push);
    expect(noForge.status).toBe(400);
    const unreadable = await deliver(pipeline.webhookUrl, { "x-github-event": "pull_request" }, '{"action":"opened"}');
    expect(unreadable).toEqual({
      status: 422,
      body: { message: "This pull_request delivery cannot be read: pull_request must be an object." },
    });
    expect(await buildsOf(pipeline, org.secret)).toEqual([]);
  });
});
