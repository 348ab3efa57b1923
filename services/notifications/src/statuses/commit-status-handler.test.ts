import { randomBytes } from "node:crypto";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { commitStatusNotifications } from "@conveyor/ci-rules";
import { type Build, BuildSchema, type Job, JobSchema } from "@conveyor/proto/builds";
import type { NotificationEvent } from "../events/notification-event.js";
import { keyRingFrom } from "../providers/credential-envelope.js";
import { createMemorySourceProviderRepository } from "../providers/memory-source-provider-repository.js";
import { createSourceProviders } from "../providers/source-providers.js";
import { createCommitStatusHandler, type StatusSources } from "./commit-status-handler.js";
import { readCommitStatusRequest } from "./commit-status-request.js";

const SHA = "0123456789abcdef0123456789abcdef01234567";

const build = (over: MessageInitShape<typeof BuildSchema> = {}): Build =>
  create(BuildSchema, {
    id: "build-1",
    organizationId: "org-1",
    pipelineId: "pipe-1",
    pipelineSlug: "widgets",
    number: 7,
    state: "running",
    commit: SHA,
    branch: "main",
    version: 4,
    startedAt: timestampFromDate(new Date("2026-01-01T00:00:00Z")),
    ...over,
  });

const job = (over: MessageInitShape<typeof JobSchema> = {}): Job =>
  create(JobSchema, { id: "job-1", buildId: "build-1", type: "script", label: "Tests", state: "running", ...over });

const buildEvent = (b: Build, kind = "build_state_changed"): NotificationEvent => ({
  type: "build",
  kind,
  seq: 10,
  build: b,
  previousState: "scheduled",
});

const jobEvent = (j: Job): NotificationEvent => ({
  type: "job",
  kind: "job_state_changed",
  seq: 11,
  job: j,
  previousState: "scheduled",
  organizationId: "org-1",
  pipelineId: "pipe-1",
  buildNumber: 7,
});

async function setup(
  options: { settings?: Record<string, unknown>; repository?: string; kind?: string; configuration?: string } = {},
) {
  const repository = createMemorySourceProviderRepository();
  const providers = createSourceProviders({
    repository,
    keyRing: keyRingFrom(randomBytes(32).toString("base64"), ""),
    now: () => new Date(),
  });
  const connection = await providers.create({
    organizationId: "org-1",
    kind: options.kind ?? "gitea",
    apiUrl: options.kind === "github" ? "" : "http://127.0.0.1:3000",
    token: "secret-token",
    description: "",
    createdBy: "u",
  });
  const calls: string[] = [];
  const sources: StatusSources = {
    connections: async (org) => {
      calls.push(`connections ${org}`);
      return repository.list(org);
    },
    pipeline: async (org, id) => {
      calls.push(`pipeline ${org} ${id}`);
      return {
        slug: "widgets",
        defaultBranch: "main",
        repository: options.repository ?? "http://127.0.0.1:3000/alice/widgets.git",
        providerSettings: options.settings ?? {},
        notify: commitStatusNotifications(options.configuration ?? "steps: [{command: x}]"),
      };
    },
    build: async (pipelineId, number) => {
      calls.push(`build ${pipelineId} ${number}`);
      return build();
    },
    webUrl: async (org, slug, n) => `http://ci.local/${org === "org-1" ? "acme" : org}/${slug}/builds/${n}`,
    conditionHolds: async (b, _pipeline, condition) => condition.includes(`'${b.branch}'`),
  };
  return { connection, sources, calls, handler: createCommitStatusHandler(sources) };
}

describe("the commit-status handler", () => {
  it("makes one ordered delivery per status, carrying no credential", async () => {
    const { handler, connection } = await setup();
    const intents = await handler.intents(buildEvent(build()));
    expect(intents).toHaveLength(1);
    const [intent] = intents;
    expect(intent).toMatchObject({
      kind: "commit-status",
      event: "commit_status.pending",
      host: "127.0.0.1:3000",
      ordered: true,
      targetKey: [connection._id, "alice/widgets", SHA, "buildkite/widgets"].join("\0"),
    });
    expect(JSON.stringify(intent)).not.toContain("secret-token");
    expect(readCommitStatusRequest(intent?.request ?? {})).toEqual({
      connectionId: connection._id,
      organizationId: "org-1",
      repository: { host: "127.0.0.1", port: 3000, owner: "alice", name: "widgets", path: "alice/widgets" },
      sha: SHA,
      status: {
        context: "buildkite/widgets",
        state: "pending",
        description: "Build #7 is running",
        targetUrl: "http://ci.local/acme/widgets/builds/7",
        canceled: false,
        order: [7, 4],
      },
    });
  });

  it("asks for nothing more when the organization has no connection", async () => {
    const { sources, calls } = await setup();
    const handler = createCommitStatusHandler({ ...sources, connections: async () => [] });
    expect(await handler.intents(buildEvent(build()))).toEqual([]);
    expect(calls).toEqual([]);
  });

  it("makes nothing when no connection serves the repository's host, or the repository is not a forge's", async () => {
    for (const repository of ["https://github.com/acme/widgets.git", "/tmp/local-repo"]) {
      const { handler } = await setup({ repository });
      expect(await handler.intents(buildEvent(build()))).toEqual([]);
    }
  });

  it("reads the build of a job's event and makes per-step statuses when the settings ask", async () => {
    const { handler, calls } = await setup({ settings: { publish_commit_status_per_step: true } });
    const intents = await handler.intents(jobEvent(job({ state: "passed" })));
    expect(calls).toContain("build pipe-1 7");
    expect(intents.map((i) => readCommitStatusRequest(i.request)?.status)).toEqual([
      expect.objectContaining({
        context: "buildkite/widgets/Tests",
        state: "success",
        targetUrl: "http://ci.local/acme/widgets/builds/7#job-1",
      }),
    ]);
  });

  it("makes nothing for jobs without per-step statuses, nor with publish_commit_status off", async () => {
    expect(await (await setup()).handler.intents(jobEvent(job()))).toEqual([]);
    const off = await setup({ settings: { publish_commit_status: false } });
    expect(await off.handler.intents(buildEvent(build()))).toEqual([]);
  });

  it("ignores agent events", async () => {
    const { handler, calls } = await setup();
    const agentEvent = {
      type: "agent",
      kind: "agent_connected",
      seq: 1,
      previousState: "",
    } as unknown as NotificationEvent;
    expect(await handler.intents(agentEvent)).toEqual([]);
    expect(calls).toEqual([]);
  });

  it("adds the YAML's notify github_commit_status entries whose if: holds, at build and step level", async () => {
    const { handler } = await setup({
      settings: { publish_commit_status: false },
      configuration: `
notify:
  - github_commit_status: {context: ci/yes}
    if: build.branch == 'main'
  - github_commit_status: {context: ci/no}
    if: build.branch == 'dev'
steps:
  - label: Tests
    key: tests
    command: x
    notify: [{github_commit_status: {context: ci/tests}}]
  - label: Other
    command: y
`,
    });
    const contexts = async (e: NotificationEvent) =>
      (await handler.intents(e)).map((i) => readCommitStatusRequest(i.request)?.status.context);
    expect(await contexts(buildEvent(build()))).toEqual(["ci/yes"]);
    expect(await contexts(jobEvent(job({ stepKey: "tests", state: "passed" })))).toEqual(["ci/tests"]);
    // A step without notify, with per-step statuses off: nothing, and its build is not read.
    expect(await contexts(jobEvent(job({ label: "Other" })))).toEqual([]);
  });

  it("does not read a job's build when nothing would be sent for the job", async () => {
    const { handler, calls } = await setup();
    expect(await handler.intents(jobEvent(job({ state: "passed" })))).toEqual([]);
    expect(calls.filter((c) => c.startsWith("build "))).toEqual([]);
  });

  it("sets nothing for a build of HEAD (its commit is not known yet)", async () => {
    const { handler } = await setup();
    expect(await handler.intents(buildEvent(build({ commit: "HEAD" })))).toEqual([]);
  });
});
