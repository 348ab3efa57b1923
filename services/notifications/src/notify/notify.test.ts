import { create } from "@bufbuild/protobuf";
import { BuildSchema, JobSchema } from "@conveyor/proto/builds";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { createPipelineCache } from "../cache/pipeline-cache.js";
import type { NotificationEvent } from "../events/notification-event.js";
import { createNotifyHandler } from "./notify-handler.js";
import { buildEmail, notifyBuildEvent, notifyStepEvents, type StepJob, slackText } from "./notify-rules.js";

const ORG = "11111111-1111-4111-8111-111111111111";
const SLACK = "https://hooks.slack.com/services/T/B/x";
const config = [
  "notify:",
  "  - webhook: https://hooks.example/ci",
  "  - email: dev@example.com",
  '    if: build.state == "failed"',
  "  - slack:",
  `      webhook_url: ${SLACK}`,
  "      channels: ['#ci', '#ops']",
  "steps:",
  "  - label: Tests",
  "    command: make test",
  "    notify:",
  `      - slack: ${SLACK}`,
  "  - command: make lint",
].join("\n");
const pipeline = create(PipelineSchema, { id: "p-1", slug: "web", name: "Web", configuration: config });
const build = (state: string) =>
  create(BuildSchema, {
    id: "b-1",
    organizationId: ORG,
    pipelineId: "p-1",
    pipelineSlug: "web",
    number: 7,
    state,
    branch: "main",
    commit: "abc123",
    message: "Fix <it>\nmore",
  });

function handler(jobs: ReturnType<typeof create<typeof JobSchema>>[] = []) {
  return createNotifyHandler({
    identity: { getOrganization: async () => ({ organization: { slug: "acme" } }) } as never,
    pipelines: createPipelineCache({ getPipeline: async () => ({ pipeline }) } as never, { ttlMs: 0, max: 10 }),
    builds: { getBuild: async () => ({ build: { ...build("failing"), jobs } }) } as never,
    payloads: { body: async (_e, name) => ({ event: name }) },
    publicUrl: "http://api.test",
    webUrl: "http://web.test",
  });
}
const buildEvent = (kind: string, state: string, previousState = ""): NotificationEvent => ({
  type: "build",
  kind,
  seq: 1,
  build: build(state),
  previousState,
});

describe("notifyBuildEvent", () => {
  it.each([
    ["build_created", "scheduled", "", "build.scheduled"],
    ["build_state_changed", "running", "scheduled", "build.running"],
    ["build_state_changed", "running", "failing", null],
    ["build_state_changed", "failing", "running", "build.failing"],
    ["build_state_changed", "blocked", "running", "build.blocked"],
    ["build_state_changed", "failed", "failing", null],
    ["build_finished", "failed", "failing", "build.finished"],
    ["build_finished", "skipped", "scheduled", null],
  ])("%s to %s from %s is %s", (kind, state, previous, name) => {
    expect(notifyBuildEvent(kind, state, previous)).toBe(name);
  });
});

describe("the notify handler", () => {
  it("sends the webhook on a created build, and nothing whose event or if does not match", async () => {
    const intents = await handler().intents(buildEvent("build_created", "scheduled"));
    expect(intents).toEqual([
      {
        kind: "notify-webhook",
        event: "build.scheduled",
        targetKey: "build:0:https://hooks.example/ci",
        host: "hooks.example",
        ordered: false,
        request: { url: "https://hooks.example/ci", body: '{"event":"build.scheduled"}' },
      },
    ]);
  });

  it("sends email only when its if holds, and slack once per channel, on a finished build", async () => {
    const intents = await handler().intents(buildEvent("build_finished", "failed", "failing"));
    expect(intents.map((i) => [i.kind, i.targetKey])).toEqual([
      ["notify-webhook", "build:0:https://hooks.example/ci"],
      ["email", "build:1:dev@example.com"],
      ["slack", `build:2:${SLACK}:#ci`],
      ["slack", `build:2:${SLACK}:#ops`],
    ]);
    expect(intents[1]?.request).toMatchObject({
      to: "dev@example.com",
      subject: "[Web] Build #7 of Web failed (main)",
    });
    expect(intents[2]?.request).toEqual({
      url: SLACK,
      payload: { text: "<http://web.test/acme/web/builds/7|Build #7 of Web failed>", channel: "#ci" },
    });
    const passed = await handler().intents(buildEvent("build_finished", "passed", "running"));
    expect(passed.map((i) => i.kind)).toEqual(["notify-webhook", "slack", "slack"]);
  });

  it("sends a step's slack when its job finishes, found by its place and label", async () => {
    const job = (label: string, stepPosition: number, state = "failed") =>
      create(JobSchema, { id: "j-1", buildId: "b-1", label, stepPosition, state, type: "script" });
    const event = (j: ReturnType<typeof job>, previousState = "running"): NotificationEvent => ({
      type: "job",
      kind: "job_state_changed",
      seq: 2,
      job: j,
      previousState,
      organizationId: ORG,
      pipelineId: "p-1",
      buildNumber: 7,
    });
    const intents = await handler().intents(event(job("Tests", 0)));
    expect(intents).toEqual([
      expect.objectContaining({
        kind: "slack",
        event: "step.finished",
        request: {
          url: SLACK,
          payload: { text: "<http://web.test/acme/web/builds/7#j-1|Tests of build #7 of Web failed>" },
        },
      }),
    ]);
    expect(await handler().intents(event(job("make lint", 1)))).toEqual([]);
    // Its first failure while another job of the step runs is step.failing too.
    const sibling = create(JobSchema, { id: "j-2", stepId: "s-1", state: "running", type: "script" });
    const failing = await handler([sibling]).intents(event({ ...job("Tests", 0), stepId: "s-1" }));
    expect(failing.map((i) => i.event)).toEqual(["step.failing", "step.finished"]);
    expect(await handler().intents(event(job("Tests", 0, "running"), "accepted"))).toEqual([]);
    expect(await handler().intents(event(job("Renamed", 0)))).toEqual([]);
  });
});

describe("notify from uploaded pipelines", () => {
  it("adds a build's uploaded build-level rules to the configuration's", async () => {
    const e = buildEvent("build_created", "scheduled");
    if (e.type !== "build") throw new Error("a build event");
    e.build.uploadedNotifyJson = JSON.stringify([{ type: "webhook", url: "https://uploaded.example/hook" }]);
    const intents = await handler().intents(e);
    expect(intents.map((i) => i.targetKey)).toEqual([
      "build:0:https://hooks.example/ci",
      "build:1:https://uploaded.example/hook",
    ]);
  });

  it("sends an uploaded step's slack from the rules its job carries", async () => {
    const rules = [{ type: "slack", url: SLACK, channels: ["#up"], message: "uploaded" }];
    const job = create(JobSchema, {
      id: "j-9",
      label: "Uploaded",
      stepPosition: 0.5,
      state: "passed",
      type: "script",
      notifyJson: JSON.stringify(rules),
    });
    const intents = await handler().intents({
      type: "job",
      kind: "job_state_changed",
      seq: 3,
      job,
      previousState: "running",
      organizationId: ORG,
      pipelineId: "p-1",
      buildNumber: 7,
    });
    expect(intents).toEqual([
      expect.objectContaining({
        kind: "slack",
        event: "step.finished",
        request: {
          url: SLACK,
          payload: {
            text: "uploaded\n<http://web.test/acme/web/builds/7#j-9|Uploaded of build #7 of Web passed>",
            channel: "#up",
          },
        },
      }),
    ]);
  });
});

describe("notifyStepEvents", () => {
  const j = (id: string, state: string, more: Partial<StepJob> = {}): StepJob => ({
    id,
    stepId: "s",
    state,
    softFailed: false,
    retried: false,
    finishedAtMs: ["running", "scheduled", "assigned"].includes(state) ? 0 : 100,
    ...more,
  });
  it.each<[string, StepJob, string, StepJob[], string[]]>([
    ["a job still running", j("a", "running"), "accepted", [], []],
    ["a repeat of the same state", j("a", "failed"), "failed", [], []],
    ["the only job of its step failing", j("a", "failed"), "running", [], ["step.finished"]],
    ["a job passing while another runs", j("a", "passed"), "running", [j("b", "running")], ["step.finished"]],
    [
      "the first failure while another runs",
      j("a", "failed"),
      "running",
      [j("b", "running")],
      ["step.failing", "step.finished"],
    ],
    [
      "a timeout while another waits",
      j("a", "timed_out"),
      "running",
      [j("b", "scheduled")],
      ["step.failing", "step.finished"],
    ],
    ["a soft failure", j("a", "failed", { softFailed: true }), "running", [j("b", "running")], ["step.finished"]],
    [
      "a second failure (the step is failing already)",
      j("a", "failed", { finishedAtMs: 200 }),
      "running",
      [j("b", "failed"), j("c", "running")],
      ["step.finished"],
    ],
    [
      "the earlier of two failures read after both",
      j("a", "failed"),
      "running",
      [j("b", "failed", { finishedAtMs: 200 }), j("c", "running")],
      ["step.failing", "step.finished"],
    ],
    [
      "two failures at the same instant: the smaller id",
      j("b", "failed"),
      "running",
      [j("a", "failed"), j("c", "running")],
      ["step.finished"],
    ],
    ["a failure whose siblings all ended", j("a", "failed"), "running", [j("b", "passed")], ["step.finished"]],
    [
      "another step's job running",
      j("a", "failed"),
      "running",
      [j("b", "running", { stepId: "t" })],
      ["step.finished"],
    ],
    ["a retried sibling", j("a", "failed"), "running", [j("b", "running", { retried: true })], ["step.finished"]],
  ])("%s", (_name, job, previous, others, events) => {
    expect(notifyStepEvents(job, previous, [job, ...others])).toEqual(events);
  });
});

describe("messages", () => {
  it("write an email with the build's link in text and escaped HTML", () => {
    const mail = buildEmail({
      pipelineName: "Web",
      number: 7,
      state: "passed",
      branch: "main",
      commit: "abc",
      message: "Fix <it>\nmore",
      webUrl: "http://web.test/acme/web/builds/7",
    });
    expect(mail.subject).toBe("[Web] Build #7 of Web passed (main)");
    expect(mail.text).toContain("Message: Fix <it>\n");
    expect(mail.text).toContain("http://web.test/acme/web/builds/7");
    expect(mail.html).toContain("Fix &lt;it&gt;");
    expect(mail.html).toContain('<a href="http://web.test/acme/web/builds/7">');
  });

  it("write a Slack link, after the rule's own message", () => {
    expect(slackText("Build #1 of A|B passed", "http://x/1")).toBe("<http://x/1|Build #1 of AB passed>");
    expect(slackText("Build #1", "http://x/1", "Deploy me")).toBe("Deploy me\n<http://x/1|Build #1>");
  });
});
