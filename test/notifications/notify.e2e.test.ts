import { send, stack, unique } from "../support/stack-env.js";
import { eventually, startReceiver } from "../support/webhook-receiver.js";

// The pipeline YAML's notify: on the stack (docs/notifications.md#notify): a build-level webhook gets the build's
// events with REST's build, a webhook whose if: does not hold gets nothing, a Slack incoming webhook gets the rule's
// message with the build's link once per channel, a step's Slack gets its job's end; forms this server does not send
// are refused with a 422 naming them, on create and update. Email is test/notifications/notify-email.e2e.test.ts.
const base = `/v2/organizations/${stack.orgSlug}`;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

async function createPipeline(configuration: string) {
  return send("POST", `${base}/pipelines`, stack.apiToken, {
    name: unique("notify"),
    repository: "/tmp/nothing",
    cluster_id: stack.clusterId,
    configuration,
  });
}

describe("notify: in a pipeline's configuration", () => {
  it("sends webhooks, Slack messages and a step's Slack message as the rules say", async () => {
    const tag = unique("n");
    const configuration = [
      "notify:",
      `  - webhook: ${receiver.url(`/${tag}/hook`)}`,
      `  - webhook: ${receiver.url(`/${tag}/only-passed`)}`,
      '    if: build.state == "passed"',
      "  - slack:",
      `      webhook_url: ${receiver.url(`/${tag}/slack`)}`,
      "      channels: ['#ci', '#ops']",
      "      message: Heads up",
      "steps:",
      "  - label: Tests",
      "    command: make test",
      "    notify:",
      `      - slack: ${receiver.url(`/${tag}/step-slack`)}`,
    ].join("\n");
    const pipeline = await createPipeline(configuration);
    expect(pipeline.status).toBe(201);
    const build = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, stack.apiToken, {
      commit: "HEAD",
      branch: "main",
      message: "notify: me",
    });
    expect(build.status).toBe(201);
    await eventually("build.scheduled", () => receiver.at(`/${tag}/hook`).length === 1);
    const [scheduled] = receiver.at(`/${tag}/hook`);
    expect(scheduled?.event).toBe("build.scheduled");
    expect(scheduled?.delivery).toMatch(/^[0-9a-f-]{36}$/);
    expect(scheduled?.body).toMatchObject({
      event: "build.scheduled",
      build: { id: build.body.id, state: "scheduled" },
    });

    const cancel = await send(
      "PUT",
      `${base}/pipelines/${pipeline.body.slug}/builds/${build.body.number}/cancel`,
      stack.apiToken,
    );
    expect(cancel.status).toBe(200);
    await eventually("build.finished", () => receiver.at(`/${tag}/hook`).length === 2);
    await eventually("two Slack messages", () => receiver.at(`/${tag}/slack`).length === 2);
    await eventually("the step's Slack message", () => receiver.at(`/${tag}/step-slack`).length === 1);
    expect(receiver.at(`/${tag}/hook`)[1]?.body).toMatchObject({
      event: "build.finished",
      build: { state: "canceled" },
    });
    const link = `${build.body.web_url}`;
    const sentence = `Build #${build.body.number} of ${pipeline.body.name} was canceled`;
    expect(receiver.at(`/${tag}/slack`).map((r) => r.body)).toEqual([
      { text: `Heads up\n<${link}|${sentence}>`, channel: "#ci" },
      { text: `Heads up\n<${link}|${sentence}>`, channel: "#ops" },
    ]);
    expect(String(receiver.at(`/${tag}/step-slack`)[0]?.body.text)).toMatch(
      new RegExp(`^<${link}#[0-9a-f-]{36}\\|Tests of build #${build.body.number} of .* canceled>$`),
    );
    // The webhook whose if: did not hold got nothing.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.at(`/${tag}/only-passed`)).toEqual([]);
    expect(receiver.at(`/${tag}/hook`)).toHaveLength(2);
  });

  it.each([
    ["notify:\n  - basecamp_campfire: https://3.basecamp.com/x\n", "configuration.notify[0].basecamp_campfire"],
    ["notify:\n  - pagerduty_change_event: abc123\n", "configuration.notify[0].pagerduty_change_event"],
    ["notify:\n  - slack: '#general'\n", "configuration.notify[0].slack"],
    ["notify:\n  - email: dev@example.com\n    if: step.outcome == 'hard_failed'\n", "configuration.notify[0].if"],
  ])("refuses %j on create and update, naming %s", async (notify, field) => {
    const created = await createPipeline(`${notify}steps:\n  - command: make\n`);
    expect(created.status).toBe(422);
    expect(created.body.errors?.map((e: { field: string }) => e.field)).toContain(field);
    const ok = await createPipeline("steps:\n  - command: make\n");
    expect(ok.status).toBe(201);
    const updated = await send("PATCH", `${base}/pipelines/${ok.body.slug}`, stack.apiToken, {
      configuration: `${notify}steps:\n  - command: make\n`,
    });
    expect(updated.status).toBe(422);
    expect(updated.body.errors?.map((e: { field: string }) => e.field)).toContain(field);
    const kept = await send("GET", `${base}/pipelines/${ok.body.slug}`, stack.apiToken);
    expect(kept.body.configuration).toBe("steps:\n  - command: make\n");
  });
});
