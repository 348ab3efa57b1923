import { parsePipelineYaml } from "../steps/parse-yaml.js";
import { parseVisualSteps } from "../steps/visual-steps.js";
import { type NotifyRule, notifyFiresOn } from "./notify.js";

const HOOK = "https://hooks.example/ci";
const SLACK = "https://hooks.slack.com/services/T0/B0/x";

/** The build-level notify of a document, or its errors. */
function notifyOf(yaml: string, options = {}) {
  const r = parsePipelineYaml(`steps:\n  - command: make\n${yaml}`, options);
  return r.ok ? { notify: r.notify } : { errors: r.errors };
}

describe("build-level notify", () => {
  it("reads webhook, email and slack, with if", () => {
    expect(
      notifyOf(
        [
          "notify:",
          `  - webhook: ${HOOK}`,
          "  - email: dev@example.com",
          '    if: build.state == "failed"',
          `  - slack: ${SLACK}`,
          "  - slack:",
          `      webhook_url: ${SLACK}`,
          "      channels: ['#ci', '@ann']",
          "      message: Broken",
          "  - github_commit_status: {context: my/ctx, blocked_builds_as_pending: true}",
        ].join("\n"),
      ),
    ).toEqual({
      notify: [
        { type: "webhook", url: HOOK },
        { type: "email", address: "dev@example.com", if: 'build.state == "failed"' },
        { type: "slack", url: SLACK, channels: [] },
        { type: "slack", url: SLACK, channels: ["#ci", "@ann"], message: "Broken" },
        { type: "github_commit_status", options: { context: "my/ctx", blocked_builds_as_pending: true } },
      ],
    });
    expect(notifyOf("")).toEqual({ notify: [] });
    expect(notifyOf("notify: ~")).toEqual({ notify: [] });
  });

  it.each([
    [
      "notify:\n  - basecamp_campfire: https://3.basecamp.com/x",
      "configuration.notify[0].basecamp_campfire",
      "Basecamp",
    ],
    ["notify:\n  - pagerduty_change_event: abc", "configuration.notify[0].pagerduty_change_event", "PagerDuty"],
    ["notify:\n  - github_check: {name: Tests}", "configuration.notify[0].github_check", "GitHub checks"],
    [
      "notify:\n  - github_commit_status: {context: a, colour: red}",
      "configuration.notify[0].github_commit_status.colour",
      "not a github_commit_status option",
    ],
    [
      "notify:\n  - github_commit_status: {context: [a]}",
      "configuration.notify[0].github_commit_status.context",
      "must be a string",
    ],
    [
      "notify:\n  - github_commit_status: {blocked_builds_as_pending: 'yes'}",
      "configuration.notify[0].github_commit_status.blocked_builds_as_pending",
      "true or false",
    ],
    ["notify:\n  - teams: https://x", "configuration.notify[0].teams", "not a notification this server knows"],
    ["notify:\n  - slack: '#general'", "configuration.notify[0].slack", "Slack incoming-webhook URL"],
    ["notify:\n  - slack: {channels: ['#ci']}", "configuration.notify[0].slack.webhook_url", "is required"],
    [`notify:\n  - slack: {webhook_url: ${SLACK}, color: red}`, "configuration.notify[0].slack.color", "not a slack"],
    ["notify:\n  - webhook: ftp://x", "configuration.notify[0].webhook", "http or https"],
    ["notify:\n  - email: not-an-address", "configuration.notify[0].email", "one email address"],
    ["notify:\n  - email: a@example.com\n    if: build.nope == 1", "configuration.notify[0].if", "nope"],
    ["notify:\n  - {email: a@example.com, webhook: https://x}", "configuration.notify[0]", "must name one"],
    ["notify: {email: a@example.com}", "configuration.notify", "must be a list"],
    ["notify:\n  - just-a-string", "configuration.notify[0]", "must be a mapping"],
    [`notify:\n${"  - email: a@example.com\n".repeat(21)}`, "configuration.notify", "at most 20"],
  ])("refuses %j naming %s", (yaml, field, code) => {
    const r = notifyOf(yaml);
    expect(r.errors?.[0]?.field).toBe(field);
    expect(r.errors?.[0]?.code).toContain(code);
  });

  it("is read in an uploaded pipeline too, but for the commit statuses, which are the configuration's", () => {
    expect(notifyOf("notify:\n  - email: a@example.com", { uploaded: true })).toEqual(
      notifyOf("notify:\n  - email: a@example.com"),
    );
    expect(notifyOf("notify:\n  - github_commit_status: {context: x}", { uploaded: true }).errors).toEqual([
      {
        field: "configuration.notify[0].github_commit_status",
        code: expect.stringContaining("uploaded pipeline"),
      },
    ]);
  });
});

describe("step-level notify", () => {
  const stepNotify = (yaml: string, options = {}) => {
    const r = parsePipelineYaml(yaml, options);
    if (!r.ok) return { errors: r.errors };
    const [first] = r.steps;
    return { notify: first?.type === "script" ? first.notify : undefined };
  };

  it("reads slack and the commit statuses on command steps", () => {
    expect(
      stepNotify(`steps:\n  - command: make\n    notify:\n      - slack: ${SLACK}\n        if: build.branch == "main"`),
    ).toEqual({ notify: [{ type: "slack", url: SLACK, channels: [], if: 'build.branch == "main"' }] });
    expect(stepNotify("steps:\n  - command: make")).toEqual({ notify: undefined });
  });

  it.each([
    [`steps:\n  - command: make\n    notify:\n      - webhook: ${HOOK}`, "configuration.steps[0].notify[0].webhook"],
    ["steps:\n  - command: make\n    notify:\n      - email: a@example.com", "configuration.steps[0].notify[0].email"],
    [`steps:\n  - wait: ~\n    notify:\n      - slack: ${SLACK}`, "configuration.steps[0].notify"],
    [`steps:\n  - block: Go\n    notify:\n      - slack: ${SLACK}`, "configuration.steps[0].notify"],
    [
      `steps:\n  - group: G\n    notify:\n      - slack: ${SLACK}\n    steps:\n      - command: x`,
      "configuration.steps[0].notify",
    ],
  ])("refuses %j naming %s", (yaml, field) => {
    expect(stepNotify(yaml).errors?.[0]?.field).toBe(field);
  });

  it("is read in an uploaded pipeline (commit statuses refused there), and refused in the visual steps", () => {
    expect(stepNotify(`steps:\n  - command: make\n    notify:\n      - slack: ${SLACK}`, { uploaded: true })).toEqual({
      notify: [{ type: "slack", url: SLACK, channels: [] }],
    });
    expect(
      stepNotify("steps:\n  - command: make\n    notify:\n      - github_commit_status: {}", { uploaded: true }).errors,
    ).toEqual([
      {
        field: "configuration.steps[0].notify[0].github_commit_status",
        code: expect.stringContaining("uploaded pipeline"),
      },
    ]);
    const visual = parseVisualSteps([{ type: "script", command: "x", notify: [{ slack: SLACK }] }]);
    expect(visual.ok ? [] : visual.errors).toEqual([
      { field: "steps[0].notify", code: "is taken in YAML configuration only, not in the visual steps" },
    ]);
  });
});

describe("notifyFiresOn", () => {
  const rule = (type: string) => ({ type, url: HOOK, address: "a@b.c", channels: [], options: {} }) as NotifyRule;
  it("fires as Buildkite documents each notification", () => {
    const build = ["build.scheduled", "build.running", "build.blocked", "build.failing", "build.finished"];
    const on = (r: NotifyRule, level: "build" | "step", events = build) =>
      events.filter((e) => notifyFiresOn(r, level, e));
    expect(on(rule("webhook"), "build")).toEqual([
      "build.scheduled",
      "build.running",
      "build.blocked",
      "build.finished",
    ]);
    expect(on(rule("email"), "build")).toEqual(["build.failing", "build.finished"]);
    expect(on(rule("slack"), "build")).toEqual(["build.running", "build.blocked", "build.failing", "build.finished"]);
    expect(on(rule("github_commit_status"), "build")).toEqual([]);
    expect(on(rule("slack"), "step", ["step.failing", "step.finished", "build.finished"])).toEqual([
      "step.failing",
      "step.finished",
    ]);
  });
});
