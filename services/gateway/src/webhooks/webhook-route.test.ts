import { createHmac } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createMemoryBuildsService, type MemoryBuilds } from "@conveyor/builds/testing";
import { DEFAULT_PROVIDER_SETTINGS } from "@conveyor/ci-rules";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { stepMessages } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg } from "../testing/test-app.js";
import { WEBHOOK_BODY_LIMIT } from "./webhook-route.js";

const acme = makeOrg("acme", "Acme");
const TOKEN = "a".repeat(48);
const SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246";

const pipelineWith = (webhookSecret = "", settings: Record<string, unknown> = {}): Pipeline =>
  create(PipelineSchema, {
    id: "33333333-0000-4000-8000-000000000001",
    organizationId: acme.id,
    slug: "app",
    name: "App",
    repository: "git@github.com:acme/app.git",
    defaultBranch: "main",
    provider: {
      id: "github",
      webhookToken: TOKEN,
      webhookSecret,
      settings: { ...DEFAULT_PROVIDER_SETTINGS, ...settings },
    },
    steps: stepMessages([{ type: "script", name: "test", command: "make test", agent_query_rules: [] }]),
  });

let app: FastifyInstance;
let builds: MemoryBuilds;
let pipeline: Pipeline;
let lookups: string[];

async function start(p: Pipeline) {
  pipeline = p;
  lookups = [];
  builds = createMemoryBuildsService();
  ({ app } = await buildTestApp(
    { orgs: [acme], users: [], tokens: new Map(), revoked: [] },
    {
      pipelines: {
        getPipelineByWebhookToken(req) {
          lookups.push(req.webhookToken);
          if (req.webhookToken !== TOKEN) throw new ConnectError("No pipeline found", Code.NotFound);
          return { pipeline };
        },
      },
      builds: builds.service,
    },
  ));
}
afterEach(() => app.close());

const push = (branch = "main", message = "Update README.md") =>
  JSON.stringify({
    ref: `refs/heads/${branch}`,
    after: SHA,
    head_commit: { id: SHA, message, author: { name: "Codertocat", email: "codertocat@example.com" } },
  });
const deliver = (payload: string, headers: Record<string, string>, token = TOKEN) =>
  app.inject({
    method: "POST",
    url: `/webhooks/deliver/${token}`,
    payload,
    headers: { "content-type": "application/json", ...headers },
  });
const github = (event: string, delivery = `d-${Math.random()}`) => ({
  "x-github-event": event,
  "x-github-delivery": delivery,
});
const stored = () => builds.repos.builds.listBuilds({ organizationIds: [acme.id] }, 0, 100);
const hmac = (secret: string, body: string) => createHmac("sha256", secret).update(body).digest("hex");

describe("POST /webhooks/deliver/{token}", () => {
  it("builds a GitHub push and answers with the build's links", async () => {
    await start(pipelineWith());
    const res = await deliver(push(), github("push"));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      message: "Received: 1 build created.",
      redelivery: false,
      builds: [
        {
          number: 1,
          branch: "main",
          commit: SHA,
          url: "http://api.test/v2/organizations/acme/pipelines/app/builds/1",
          web_url: "http://web.test/acme/app/builds/1",
        },
      ],
      canceled_builds: 0,
      reasons: [],
    });
    const [build] = await stored();
    expect(build).toMatchObject({
      source: "webhook",
      sourceEvent: "push",
      commit: SHA,
      branch: "main",
      message: "Update README.md",
      author: { name: "Codertocat", email: "codertocat@example.com" },
    });
    expect(build?.creator).toBeNull();
  });

  it("answers a redelivery with what the first did, creating nothing", async () => {
    await start(pipelineWith());
    await deliver(push(), github("push", "same"));
    const again = await deliver(push(), github("push", "same"));
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ message: "Received before: nothing was done again.", redelivery: true });
    expect(again.json().builds).toHaveLength(1);
    expect(await stored()).toHaveLength(1);
  });

  it("answers a ping 200, and says why an event built nothing", async () => {
    await start(pipelineWith());
    const ping = await deliver(JSON.stringify({ zen: "Keep it simple.", hook_id: 1 }), github("ping"));
    expect(ping.statusCode).toBe(200);
    expect(ping.json()).toMatchObject({
      message: "Received: nothing to build.",
      reasons: ["Pong: deliveries to this URL reach the pipeline."],
    });
    const tag = await deliver(JSON.stringify({ ref: "refs/tags/v1", after: SHA }), github("push"));
    expect(tag.json().reasons).toEqual(["Tag pushes are not built: the pipeline's build_tags setting is off."]);
    expect(await stored()).toEqual([]);
  });

  it("answers 404 for a token no pipeline has", async () => {
    await start(pipelineWith());
    const res = await deliver(push(), github("push"), "b".repeat(48));
    expect(res.statusCode).toBe(404);
    expect(res.json().message).toMatch(/^No pipeline has this webhook URL/);
    expect(lookups).toEqual(["b".repeat(48)]);
    expect(await stored()).toEqual([]);
  });

  it("answers 400 for a request no forge sent", async () => {
    await start(pipelineWith());
    const res = await deliver(push(), {});
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain("X-GitHub-Event");
  });

  it("answers 422 saying what is wrong with a payload it cannot read", async () => {
    await start(pipelineWith());
    const res = await deliver(JSON.stringify({ after: SHA }), github("push"));
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ message: "This push delivery cannot be read: ref must be a string." });
    const notJson = await deliver("{", github("push"));
    expect(notJson.statusCode).toBe(422);
    expect(notJson.json().message).toContain("not JSON");
    expect(await stored()).toEqual([]);
  });

  it("takes GitHub's form-encoded deliveries, and refuses other content types", async () => {
    await start(pipelineWith());
    const form = await app.inject({
      method: "POST",
      url: `/webhooks/deliver/${TOKEN}`,
      payload: new URLSearchParams({ payload: push() }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", ...github("push") },
    });
    expect(form.statusCode).toBe(200);
    expect(form.json().builds).toHaveLength(1);
    const xml = await deliver("<push/>", { ...github("push"), "content-type": "application/xml" });
    expect(xml.statusCode).toBe(415);
    expect(xml.json().message).toContain("application/json");
  });

  it("refuses a body larger than a delivery may be", async () => {
    await start(pipelineWith());
    const res = await deliver(push("main", "x".repeat(WEBHOOK_BODY_LIMIT)), github("push"));
    expect(res.statusCode).toBe(413);
    expect(await stored()).toEqual([]);
  });
});

describe("a pipeline with a webhook secret", () => {
  const SECRET = "It's a Secret to Everybody";

  it("takes GitHub deliveries signed with it, and refuses unsigned or wrongly signed ones with 401", async () => {
    await start(pipelineWith(SECRET));
    const body = push();
    const unsigned = await deliver(body, github("push"));
    expect(unsigned.statusCode).toBe(401);
    expect(unsigned.json().message).toContain("not signed");
    const wrong = await deliver(body, { ...github("push"), "x-hub-signature-256": `sha256=${hmac("other", body)}` });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().message).toContain("X-Hub-Signature-256 does not match");
    expect(await stored()).toEqual([]);
    const signed = await deliver(body, { ...github("push"), "x-hub-signature-256": `sha256=${hmac(SECRET, body)}` });
    expect(signed.statusCode).toBe(200);
    expect(await stored()).toHaveLength(1);
  });

  it("takes GitLab deliveries whose X-Gitlab-Token is the secret", async () => {
    await start(pipelineWith(SECRET));
    const body = JSON.stringify({ object_kind: "push", ref: "refs/heads/main", after: SHA, checkout_sha: SHA });
    const gitlab = { "x-gitlab-event": "Push Hook", "x-gitlab-event-uuid": "u-1" };
    expect((await deliver(body, gitlab)).statusCode).toBe(401);
    expect((await deliver(body, { ...gitlab, "x-gitlab-token": "guess" })).statusCode).toBe(401);
    const ok = await deliver(body, { ...gitlab, "x-gitlab-token": SECRET });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().builds).toHaveLength(1);
  });

  it("takes Gitea's and Bitbucket's signatures", async () => {
    await start(pipelineWith(SECRET));
    const body = push();
    const gitea = { "x-gitea-event": "push", "x-gitea-delivery": "g-1", "x-gitea-signature": hmac(SECRET, body) };
    expect((await deliver(body, gitea)).statusCode).toBe(200);
    const bitbucketBody = JSON.stringify({
      push: { changes: [{ new: { type: "branch", name: "dev", target: { hash: SHA, message: "m" } }, old: null }] },
    });
    const bitbucket = { "x-event-key": "repo:push", "x-request-uuid": "r-1" };
    expect((await deliver(bitbucketBody, bitbucket)).statusCode).toBe(401);
    const signed = await deliver(bitbucketBody, {
      ...bitbucket,
      "x-hub-signature": `sha256=${hmac(SECRET, bitbucketBody)}`,
    });
    expect(signed.statusCode).toBe(200);
    expect((await stored()).map((b) => b.branch).sort()).toEqual(["dev", "main"]);
  });
});
