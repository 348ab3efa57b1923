import {
  commitStatusNotifications,
  NO_COMMIT_STATUS_NOTIFICATIONS,
  stepCommitStatusNotifications,
} from "./notify-statuses.js";

describe("commitStatusNotifications", () => {
  it("reads the build's and the steps' github_commit_status entries, leaving other kinds", () => {
    const read = commitStatusNotifications(`
notify:
  - email: dev@example.com
  - github_commit_status:
      context: ci/build
      blocked_builds_as_pending: true
  - github_commit_status:
      context: ci/main-only
    if: build.branch == "main"
steps:
  - label: Tests
    key: tests
    command: make test
    notify:
      - github_commit_status:
          context: ci/tests
          blocked_builds_as_pending: true
      - slack: "#ci"
  - label: Lint
    command: make lint
    notify:
      - github_commit_status: {}
  - wait
  - group: Checks
    steps:
      - command: make audit
        key: audit
        notify:
          - github_commit_status:
              context: ci/audit
`);
    expect(read.build).toEqual([
      { context: "ci/build", blockedBuildsAsPending: true, condition: null },
      { context: "ci/main-only", blockedBuildsAsPending: false, condition: 'build.branch == "main"' },
    ]);
    // A step's blocked_builds_as_pending is not Buildkite's: ignored.
    expect(read.byStepKey.get("tests")).toEqual([
      { context: "ci/tests", blockedBuildsAsPending: false, condition: null },
    ]);
    expect(read.byStepKey.get("audit")).toEqual([
      { context: "ci/audit", blockedBuildsAsPending: false, condition: null },
    ]);
    expect(read.byStepLabel.get("Lint")).toEqual([{ context: null, blockedBuildsAsPending: false, condition: null }]);
  });

  it("reads a bare list of steps, which has no build level", () => {
    const read = commitStatusNotifications(`
- command: x
  key: only
  notify:
    - github_commit_status:
        context: ci/only
`);
    expect(read.build).toEqual([]);
    expect([...read.byStepKey.keys()]).toEqual(["only"]);
  });

  it("reads nothing from YAML without the attribute, YAML that does not read, or odd shapes", () => {
    expect(commitStatusNotifications("steps:\n  - command: x\n")).toBe(NO_COMMIT_STATUS_NOTIFICATIONS);
    expect(commitStatusNotifications("github_commit_status: [unclosed")).toBe(NO_COMMIT_STATUS_NOTIFICATIONS);
    expect(commitStatusNotifications('"github_commit_status"')).toBe(NO_COMMIT_STATUS_NOTIFICATIONS);
    const odd = commitStatusNotifications(`
notify: github_commit_status
steps:
  - command: x
    notify: {github_commit_status: {context: a}}
  - github_commit_status
`);
    expect(odd.build).toEqual([]);
    expect(odd.byStepKey.size + odd.byStepLabel.size).toBe(0);
  });

  it("bounds what it reads: a context's length and a list's entries", () => {
    const entries = Array.from({ length: 80 }, (_, i) => `  - github_commit_status: {context: c${i}}`).join("\n");
    const read = commitStatusNotifications(
      `notify:\n${entries}\n  - github_commit_status: {context: ${"x".repeat(400)}}\nsteps:\n  - command: x\n`,
    );
    expect(read.build).toHaveLength(50);
    const long = commitStatusNotifications(
      `notify:\n  - github_commit_status: {context: ${"x".repeat(400)}}\nsteps: [{command: x}]\n`,
    );
    expect(long.build[0]?.context).toHaveLength(255);
  });

  it("a blank context or condition counts as none", () => {
    const read = commitStatusNotifications(
      `notify:\n  - github_commit_status: {context: "  "}\n    if: "  "\nsteps: [{command: x}]\n`,
    );
    expect(read.build).toEqual([{ context: null, blockedBuildsAsPending: false, condition: null }]);
  });
});

describe("stepCommitStatusNotifications", () => {
  const read = commitStatusNotifications(`
steps:
  - label: Tests
    key: tests
    command: x
    notify: [{github_commit_status: {context: ci/tests}}]
  - label: Lint
    command: y
    notify: [{github_commit_status: {context: ci/lint}}]
`);
  it("finds a job's entries by its step's key, else its label", () => {
    expect(stepCommitStatusNotifications(read, { stepKey: "tests", label: "whatever" })[0]?.context).toBe("ci/tests");
    expect(stepCommitStatusNotifications(read, { stepKey: "", label: " Lint " })[0]?.context).toBe("ci/lint");
    expect(stepCommitStatusNotifications(read, { stepKey: "other", label: "Lint" })).toEqual([]);
    expect(stepCommitStatusNotifications(read, { stepKey: "", label: "Nope" })).toEqual([]);
  });
});
