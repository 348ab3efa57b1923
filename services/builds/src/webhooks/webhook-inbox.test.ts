import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { DEFAULT_PROVIDER_SETTINGS } from "@conveyor/ci-rules";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { createLogger, stepMessages } from "@conveyor/runtime";
import { createBuildsParts } from "../builds-context.js";
import { createMemoryBuildRepository } from "../store/memory-build-repository.js";
import { createMemoryConcurrencySlotRepository } from "../store/memory-concurrency-slot-repository.js";
import { createMemoryJobLogRepository } from "../store/memory-job-log-repository.js";
import { createMemoryPipelineUploadRepository } from "../store/memory-pipeline-upload-repository.js";
import { createMemoryWebhookDeliveryRepository } from "../store/memory-webhook-delivery-repository.js";
import { createMemoryWebhookPullRequestRepository } from "../store/memory-webhook-pull-request-repository.js";
import { LEASE_MS, RETENTION_MS, type ReceivedDelivery } from "./webhook-inbox.js";

const SHA1 = "1".repeat(40);
const SHA2 = "2".repeat(40);

function world(settings: Record<string, unknown> = {}, pipelineFields: { skipQueuedBranchBuilds?: boolean } = {}) {
  let clock = new Date("2026-06-01T10:00:00.000Z");
  const builds = createMemoryBuildRepository();
  const deliveries = createMemoryWebhookDeliveryRepository();
  const pullRequests = createMemoryWebhookPullRequestRepository();
  const pipeline: Pipeline = create(PipelineSchema, {
    id: "00000000-0000-4000-8000-00000000aaaa",
    organizationId: "00000000-0000-4000-8000-00000000bbbb",
    slug: "app",
    name: "App",
    repository: "git@github.com:acme/app.git",
    defaultBranch: "main",
    allowRebuilds: true,
    provider: { id: "github", settings: { ...DEFAULT_PROVIDER_SETTINGS, ...settings }, webhookToken: "t" },
    steps: stepMessages([{ type: "script", name: "test", command: "make test", agent_query_rules: [] }]),
    ...pipelineFields,
  });
  let current = pipeline;
  const parts = createBuildsParts({
    repo: builds,
    logs: createMemoryJobLogRepository(),
    uploads: createMemoryPipelineUploadRepository(),
    slots: createMemoryConcurrencySlotRepository(),
    events: { publish: async () => {} },
    logger: createLogger("test", "silent"),
    now: () => clock,
    webhooks: { deliveries, pullRequests },
    // The pipeline as the pipelines service holds it now (how the receiver and the relay read it).
    triggers: { pipeline: async () => current, mayBuild: async () => true, ruleAllows: async () => true },
  });
  const deliver = (event: string, payload: unknown, deliveryId = `d-${Math.random()}`, forge = "github") =>
    parts.webhooks.receive({
      pipeline,
      organizationSlug: "acme",
      forge,
      event,
      deliveryId,
      payload: new TextEncoder().encode(JSON.stringify(payload)),
    } satisfies ReceivedDelivery);
  const allBuilds = () => builds.listBuilds({ organizationIds: [pipeline.organizationId] }, 0, 100);
  return {
    pipeline,
    parts,
    builds,
    deliveries,
    pullRequests,
    deliver,
    allBuilds,
    /** Changes the pipeline as the pipelines service holds it. */
    change: (changed: Pipeline) => {
      current = changed;
    },
    advance: (ms: number) => {
      clock = new Date(clock.getTime() + ms);
    },
  };
}

const push = (branch: string, sha = SHA1, message = "Fix the thing") => ({
  ref: `refs/heads/${branch}`,
  after: sha,
  head_commit: { id: sha, message, author: { name: "Ada", email: "ada@example.com" } },
});
const deletion = (branch: string) => ({ ref: branch, ref_type: "branch" });
const pullRequest = (action: string, branch = "feature", sha = SHA1) => ({
  action,
  number: 42,
  pull_request: {
    number: 42,
    title: "Make it better",
    draft: false,
    labels: [{ name: "ui" }],
    user: { login: "ada" },
    head: { ref: branch, sha, repo: { full_name: "acme/app", clone_url: "https://github.com/acme/app.git" } },
    base: { ref: "main", repo: { full_name: "acme/app" } },
  },
});

describe("the webhook inbox", () => {
  it("builds a push: source webhook, its commit, branch, message and author, no creator", async () => {
    const w = world();
    const receipt = await w.deliver("push", push("main"));
    expect(receipt).toEqual({
      redelivery: false,
      builds: [{ id: expect.any(String), number: 1, branch: "main", commit: SHA1 }],
      canceledBuilds: 0,
      reasons: [],
      pending: false,
    });
    const [build] = await w.allBuilds();
    expect(build).toMatchObject({
      id: receipt.builds[0]?.id,
      number: 1,
      source: "webhook",
      sourceEvent: "push",
      sourceAction: null,
      commit: SHA1,
      branch: "main",
      message: "Fix the thing",
      author: { name: "Ada", email: "ada@example.com" },
      creator: null,
      pullRequest: null,
      tag: null,
    });
  });

  it("builds nothing again for a redelivery, and answers what the first delivery did", async () => {
    const w = world();
    const first = await w.deliver("push", push("main"), "same-id");
    const again = await w.deliver("push", push("main"), "same-id");
    expect(again).toEqual({ ...first, redelivery: true });
    expect(await w.allBuilds()).toHaveLength(1);
    // Another delivery of the same commit is another push: it builds (skip_builds_for_existing_commits is off).
    expect((await w.deliver("push", push("main"), "other-id")).builds[0]?.number).toBe(2);
  });

  it("knows a redelivery without a delivery id by its payload", async () => {
    const w = world();
    await w.deliver("push", push("main"), "");
    expect((await w.deliver("push", push("main"), "")).redelivery).toBe(true);
    expect(await w.allBuilds()).toHaveLength(1);
  });

  it("answers a ping, and an event it does not read, with why nothing was built, recording nothing", async () => {
    const w = world();
    expect((await w.deliver("ping", { zen: "Keep it simple." })).reasons).toEqual([
      "Pong: deliveries to this URL reach the pipeline.",
    ]);
    expect((await w.deliver("issues", {})).reasons).toEqual(['GitHub "issues" events build nothing.']);
    expect(await w.deliveries.takeLapsed(new Date(8.64e15), new Date(8.64e15))).toBeNull();
  });

  it("refuses a payload it cannot read, saying what is wrong, and an unknown forge", async () => {
    const w = world();
    const refused = await w.deliver("push", { after: SHA1 }).catch((err: unknown) => ConnectError.from(err));
    expect(refused).toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: "This push delivery cannot be read: ref must be a string.",
    });
    const unknown = await w.deliver("push", push("main"), "x", "svn").catch((err: unknown) => ConnectError.from(err));
    expect(unknown).toMatchObject({ code: Code.InvalidArgument });
    expect(await w.allBuilds()).toEqual([]);
  });

  it("says why a delivery built nothing", async () => {
    const w = world({ build_tags: false });
    const receipt = await w.deliver("push", { ...push("main"), ref: "refs/tags/v1" });
    expect(receipt).toMatchObject({
      builds: [],
      reasons: ["Tag pushes are not built: the pipeline's build_tags setting is off."],
    });
  });

  it("builds a tag push with its tag, which its jobs get as BUILDKITE_TAG", async () => {
    const w = world({ build_tags: true });
    await w.deliver("push", { ...push("main"), ref: "refs/tags/v1.0" });
    const [build] = await w.allBuilds();
    expect(build).toMatchObject({ branch: "v1.0", tag: "v1.0" });
  });

  it("builds a pull request with its details, and later pushes to its branch as its builds until it is closed", async () => {
    const w = world();
    const opened = await w.deliver("pull_request", pullRequest("opened"));
    expect(opened.builds).toHaveLength(1);
    const pr = {
      id: "42",
      base: "main",
      repository: "https://github.com/acme/app.git",
      labels: ["ui"],
      draft: false,
      fork: false,
    };
    expect((await w.builds.findBuildById(opened.builds[0]?.id ?? ""))?.pullRequest).toEqual(pr);
    // GitHub sends both the push and the pull request's synchronize: the push builds, with the pull request's details.
    const pushed = await w.deliver("push", push("feature", SHA2));
    const synchronized = await w.deliver("pull_request", pullRequest("synchronize", "feature", SHA2));
    expect(synchronized.builds).toEqual([]);
    const pushBuild = await w.builds.findBuildById(pushed.builds[0]?.id ?? "");
    expect(pushBuild).toMatchObject({ sourceEvent: "push", pullRequest: { id: "42", base: "main", labels: ["ui"] } });
    await w.deliver("pull_request", pullRequest("closed", "feature", SHA2));
    const after = await w.deliver("push", push("feature", "3".repeat(40)));
    expect((await w.builds.findBuildById(after.builds[0]?.id ?? ""))?.pullRequest).toBeNull();
  });

  it("skips a pull request's commit built on its branch already (skip_pull_request_builds_for_existing_commits)", async () => {
    const w = world();
    await w.deliver("push", push("feature"));
    const opened = await w.deliver("pull_request", pullRequest("opened"));
    expect(opened).toMatchObject({
      builds: [],
      reasons: ['Commit 1111111111 was built on "feature" already (skip_pull_request_builds_for_existing_commits).'],
    });
  });

  it("cancels a deleted branch's unfinished builds with cancel_deleted_branch_builds", async () => {
    const w = world({ cancel_deleted_branch_builds: true });
    await w.deliver("push", push("doomed"));
    await w.deliver("push", push("kept"));
    const receipt = await w.deliver("delete", deletion("doomed"));
    expect(receipt).toMatchObject({ builds: [], canceledBuilds: 1, reasons: [] });
    const states = Object.fromEntries((await w.allBuilds()).map((b) => [b.branch, [b.state, b.cancelReason]]));
    expect(states).toEqual({ doomed: ["canceled", 'Branch "doomed" was deleted.'], kept: ["scheduled", null] });
  });

  it("holds webhook builds to the pipeline's skip-queued branch rule, as any build", async () => {
    const w = world({}, { skipQueuedBranchBuilds: true });
    await w.deliver("push", push("main", SHA1));
    await w.deliver("push", push("main", SHA2));
    const states = (await w.allBuilds()).map((b) => [b.commit, b.state]);
    expect(states.sort()).toEqual([
      [SHA1, "skipped"],
      [SHA2, "scheduled"],
    ]);
  });

  it("builds nothing for an archived pipeline, saying so", async () => {
    const w = world();
    // The gateway's copy is not archived yet; the pipeline as it is now is.
    w.change(create(PipelineSchema, { ...w.pipeline, archivedAt: timestampNow() }));
    const receipt = await w.deliver("push", push("main"));
    expect(receipt.reasons).toEqual(["The pipeline is archived: deliveries build nothing until it is unarchived."]);
    expect(await w.allBuilds()).toEqual([]);
  });
});

describe("a delivery answered but not carried out", () => {
  it("is carried out by the relay once its lease lapses, and builds once whatever is redelivered", async () => {
    const w = world();
    // The pull request store fails once: the delivery is recorded, answered as pending, and not carried out.
    const record = w.pullRequests.record;
    w.pullRequests.record = async () => {
      w.pullRequests.record = record;
      throw new Error("the database went away");
    };
    const answered = await w.deliver("pull_request", pullRequest("opened"), "pr-1");
    expect(answered).toMatchObject({ pending: true, builds: [{ number: 0, branch: "feature", commit: SHA1 }] });
    expect(await w.allBuilds()).toEqual([]);
    // A redelivery meanwhile does not carry it out twice.
    expect(await w.deliver("pull_request", pullRequest("opened"), "pr-1")).toMatchObject({
      redelivery: true,
      pending: true,
    });
    // Within its lease nothing takes it; after, the relay does.
    expect(await w.parts.duties.relayWebhooks()).toBe(0);
    w.advance(LEASE_MS + 1);
    expect(await w.parts.duties.relayWebhooks()).toBe(1);
    const builds = await w.allBuilds();
    expect(builds).toHaveLength(1);
    expect(builds[0]?.pullRequest?.id).toBe("42");
    expect(await w.deliver("pull_request", pullRequest("opened"), "pr-1")).toMatchObject({
      redelivery: true,
      pending: false,
      builds: [{ id: builds[0]?.id, number: builds[0]?.number }],
    });
    expect(await w.parts.duties.relayWebhooks()).toBe(0);
  });

  it("finds the build it made already when it died before recording it done", async () => {
    const w = world();
    const finish = w.deliveries.finish;
    w.deliveries.finish = async () => {
      w.deliveries.finish = finish;
      throw new Error("the process died");
    };
    const answered = await w.deliver("push", push("main"), "p-1");
    expect(answered.pending).toBe(true);
    expect(await w.allBuilds()).toHaveLength(1);
    w.advance(LEASE_MS + 1);
    expect(await w.parts.duties.relayWebhooks()).toBe(1);
    expect(await w.allBuilds()).toHaveLength(1);
    expect((await w.deliver("push", push("main"), "p-1")).builds).toEqual([
      { id: answered.builds[0]?.id, number: 1, branch: "main", commit: SHA1 },
    ]);
  });

  it("is forgotten once done longer ago than the retention, after which a redelivery builds again", async () => {
    const w = world();
    await w.deliver("push", push("main"), "old");
    expect(await w.parts.duties.sweepWebhooks()).toBe(0);
    w.advance(RETENTION_MS + 1);
    expect(await w.parts.duties.sweepWebhooks()).toBe(1);
    expect((await w.deliver("push", push("main"), "old")).redelivery).toBe(false);
  });
});
