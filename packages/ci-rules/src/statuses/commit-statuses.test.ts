import {
  type CommitStatusNotification,
  commitStatusesFor,
  compareStatusOrder,
  isFullCommitSha,
  type StatusBuild,
  type StatusJob,
  type StatusSettings,
  statusSettings,
} from "./commit-statuses.js";

const SHA = "0123456789abcdef0123456789abcdef01234567";
const WEB = "http://127.0.0.1:8080/acme/widgets/builds/12";

const build = (over: Partial<StatusBuild> = {}): StatusBuild => ({
  number: 12,
  state: "running",
  blocked: false,
  commit: SHA,
  pullRequest: false,
  pipelineSlug: "widgets",
  webUrl: WEB,
  startedAt: new Date("2026-01-01T00:00:00Z"),
  finishedAt: null,
  version: 3,
  notify: [],
  ...over,
});

const job = (over: Partial<StatusJob> = {}): StatusJob => ({
  id: "job-1",
  type: "script",
  label: "Tests",
  stepKey: "",
  state: "running",
  softFailed: false,
  startedAt: new Date("2026-01-01T00:00:00Z"),
  finishedAt: null,
  retriesCount: 0,
  parallelGroupIndex: null,
  parallelGroupTotal: null,
  notify: [],
  ...over,
});

const settings = (over: Partial<StatusSettings> = {}): StatusSettings => ({
  ...statusSettings({}),
  ...over,
});

const notify = (over: Partial<CommitStatusNotification> = {}): CommitStatusNotification => ({
  context: null,
  blockedBuildsAsPending: false,
  condition: null,
  ...over,
});

const always = () => true;
const finished = { startedAt: new Date("2026-01-01T00:00:00Z"), finishedAt: new Date("2026-01-01T00:01:03Z") };

describe("statusSettings", () => {
  it("has Buildkite's defaults: statuses on, per step off", () => {
    expect(statusSettings({})).toEqual({
      publishCommitStatus: true,
      publishCommitStatusPerStep: false,
      publishBlockedAsPending: false,
      useStepKeyAsCommitStatus: false,
      separatePullRequestStatuses: false,
    });
  });
  it("reads each setting and ignores values of the wrong type", () => {
    expect(
      statusSettings({
        publish_commit_status: false,
        publish_commit_status_per_step: true,
        publish_blocked_as_pending: true,
        use_step_key_as_commit_status: true,
        separate_pull_request_statuses: "yes",
      }),
    ).toEqual({
      publishCommitStatus: false,
      publishCommitStatusPerStep: true,
      publishBlockedAsPending: true,
      useStepKeyAsCommitStatus: true,
      separatePullRequestStatuses: false,
    });
  });
});

describe("isFullCommitSha", () => {
  it.each([
    [SHA, true],
    [SHA.toUpperCase(), true],
    ["a".repeat(64), true],
    ["HEAD", false],
    ["0123456", false],
    [`${SHA}0`, false],
    ["g".repeat(40), false],
    ["", false],
  ])("%s: %s", (commit, full) => {
    expect(isFullCommitSha(commit)).toBe(full);
  });
});

describe("commitStatusesFor: the build's status", () => {
  const one = (b: StatusBuild, s: StatusSettings = settings()) => {
    const statuses = commitStatusesFor({ kind: "build", build: b }, s, always);
    const [status] = statuses;
    if (statuses.length !== 1 || status === undefined) throw new Error(`expected one status, got ${statuses.length}`);
    return status;
  };

  it.each([
    ["scheduled", "pending", "Build #12 is scheduled"],
    ["running", "pending", "Build #12 is running"],
    ["failing", "failure", "Build #12 is failing"],
    ["passed", "success", "Build #12 passed (1 minute, 3 seconds)"],
    ["failed", "failure", "Build #12 failed (1 minute, 3 seconds)"],
    ["canceled", "error", "Build #12 was canceled (1 minute, 3 seconds)"],
    ["skipped", "failure", "Build #12 was skipped"],
    ["not_run", "error", "Build #12 did not run"],
  ])("%s → %s, %p", (state, expected, description) => {
    expect(one(build({ state, ...finished }))).toEqual({
      context: "buildkite/widgets",
      state: expected,
      description,
      targetUrl: WEB,
      canceled: state === "canceled",
      order: [12, 3],
    });
  });

  it("sets nothing while canceling (the canceled state follows)", () => {
    expect(commitStatusesFor({ kind: "build", build: build({ state: "canceling" }) }, settings(), always)).toEqual([]);
  });

  it("leaves the duration out when the build never started", () => {
    expect(one(build({ state: "canceled", startedAt: null, finishedAt: new Date() })).description).toBe(
      "Build #12 was canceled",
    );
  });

  it("reports a blocked build as success, or pending with publish_blocked_as_pending", () => {
    expect(one(build({ state: "passed", blocked: true }))).toMatchObject({
      state: "success",
      description: "Build #12 is blocked",
    });
    expect(one(build({ state: "passed", blocked: true }), settings({ publishBlockedAsPending: true }))).toMatchObject({
      state: "pending",
      description: "Build #12 is blocked",
    });
  });

  it("reports a build blocked after a failure as failure, and one blocked with running as pending", () => {
    expect(one(build({ state: "failed", blocked: true })).state).toBe("failure");
    expect(one(build({ state: "running", blocked: true })).state).toBe("pending");
  });

  it("uses buildkite/<slug>/pr for pull request builds with separate_pull_request_statuses", () => {
    const s = settings({ separatePullRequestStatuses: true });
    expect(one(build({ pullRequest: true }), s).context).toBe("buildkite/widgets/pr");
    expect(one(build({ pullRequest: false }), s).context).toBe("buildkite/widgets");
    expect(one(build({ pullRequest: true })).context).toBe("buildkite/widgets");
  });

  it("sets nothing with publish_commit_status off and no notification", () => {
    const off = settings({ publishCommitStatus: false });
    expect(commitStatusesFor({ kind: "build", build: build() }, off, always)).toEqual([]);
  });

  it("sets nothing for a commit that is not a full SHA (HEAD, a short SHA)", () => {
    for (const commit of ["HEAD", "0123456"]) {
      expect(commitStatusesFor({ kind: "build", build: build({ commit }) }, settings(), always)).toEqual([]);
    }
  });

  it("orders a build's statuses by its number then its version", () => {
    const early = one(build({ version: 2, state: "running" }));
    const late = one(build({ version: 5, state: "passed" }));
    const rebuilt = one(build({ number: 13, version: 1, state: "scheduled" }));
    expect(compareStatusOrder(early.order, late.order)).toBeLessThan(0);
    expect(compareStatusOrder(late.order, early.order)).toBeGreaterThan(0);
    expect(compareStatusOrder(late.order, late.order)).toBe(0);
    expect(compareStatusOrder(late.order, rebuilt.order)).toBeLessThan(0);
  });

  it("keeps the description within 140 characters", () => {
    const long = one(build({ number: 1, pipelineSlug: "x".repeat(300), state: "passed" }));
    expect(long.context.length).toBeLessThanOrEqual(255);
    expect(long.description.length).toBeLessThanOrEqual(140);
  });
});

describe("commitStatusesFor: notify github_commit_status at build level", () => {
  it("adds a status with the notification's context beside the default one", () => {
    const b = build({ notify: [notify({ context: "ci/custom" })] });
    const statuses = commitStatusesFor({ kind: "build", build: b }, settings(), always);
    expect(statuses.map((s) => [s.context, s.state])).toEqual([
      ["buildkite/widgets", "pending"],
      ["ci/custom", "pending"],
    ]);
  });

  it("is sent even with publish_commit_status off (as Buildkite's custom statuses are)", () => {
    const b = build({ state: "passed", notify: [notify({ context: "ci/custom" })] });
    const statuses = commitStatusesFor({ kind: "build", build: b }, settings({ publishCommitStatus: false }), always);
    expect(statuses.map((s) => s.context)).toEqual(["ci/custom"]);
  });

  it("takes the build's context when it names none, making one status, not two", () => {
    const b = build({ notify: [notify()] });
    expect(commitStatusesFor({ kind: "build", build: b }, settings(), always)).toHaveLength(1);
  });

  it("reads blocked_builds_as_pending for its own status only", () => {
    const b = build({
      state: "passed",
      blocked: true,
      notify: [notify({ context: "ci/deploy", blockedBuildsAsPending: true })],
    });
    const statuses = commitStatusesFor({ kind: "build", build: b }, settings(), always);
    expect(statuses.map((s) => [s.context, s.state])).toEqual([
      ["buildkite/widgets", "success"],
      ["ci/deploy", "pending"],
    ]);
  });

  it("is left out when its if: does not hold", () => {
    const b = build({ notify: [notify({ context: "ci/only-main", condition: 'build.branch == "main"' })] });
    const asked: string[] = [];
    const statuses = commitStatusesFor({ kind: "build", build: b }, settings({ publishCommitStatus: false }), (c) => {
      asked.push(c);
      return false;
    });
    expect(statuses).toEqual([]);
    expect(asked).toEqual(['build.branch == "main"']);
  });
});

describe("commitStatusesFor: per step", () => {
  const perStep = settings({ publishCommitStatusPerStep: true });
  const forJob = (j: StatusJob, s: StatusSettings = perStep, b: StatusBuild = build()) =>
    commitStatusesFor({ kind: "job", build: b, job: j }, s, always);

  it.each([
    ["scheduled", "pending", "Tests is scheduled"],
    ["assigned", "pending", "Tests is scheduled"],
    ["accepted", "pending", "Tests is scheduled"],
    ["running", "pending", "Tests is running"],
    ["passed", "success", "Tests passed (1 minute, 3 seconds)"],
    ["failed", "failure", "Tests failed (1 minute, 3 seconds)"],
    ["timed_out", "failure", "Tests timed out (1 minute, 3 seconds)"],
    ["canceled", "error", "Tests was canceled (1 minute, 3 seconds)"],
    ["expired", "error", "Tests expired before an agent ran it"],
  ])("a job %s → %s, %p", (state, expected, description) => {
    expect(forJob(job({ state, ...finished }))).toEqual([
      {
        context: "buildkite/widgets/Tests",
        state: expected,
        description,
        targetUrl: `${WEB}#job-1`,
        canceled: state === "canceled",
        order: [12, 0, expect.any(Number)],
      },
    ]);
  });

  it.each(["waiting", "blocked", "broken", "skipped", "waiting_failed", "pending"])(
    "a job %s sets nothing",
    (state) => {
      expect(forJob(job({ state }))).toEqual([]);
    },
  );

  it("reports a soft failure as success", () => {
    expect(forJob(job({ state: "failed", softFailed: true, ...finished }))[0]).toMatchObject({
      state: "success",
      description: "Tests soft failed (1 minute, 3 seconds)",
    });
  });

  it("names the step by its key with use_step_key_as_commit_status, else by its label", () => {
    const keyed = job({ stepKey: "unit", label: ":jest: Unit tests" });
    expect(forJob(keyed)[0]?.context).toBe("buildkite/widgets/:jest: Unit tests");
    expect(
      forJob(keyed, settings({ publishCommitStatusPerStep: true, useStepKeyAsCommitStatus: true }))[0]?.context,
    ).toBe("buildkite/widgets/unit");
    // Without a key, the label even with the setting; without a label, the key.
    expect(
      forJob(job(), settings({ publishCommitStatusPerStep: true, useStepKeyAsCommitStatus: true }))[0]?.context,
    ).toBe("buildkite/widgets/Tests");
    expect(forJob(job({ label: "", stepKey: "lint" }))[0]).toMatchObject({
      context: "buildkite/widgets/lint",
      description: "Job is running",
    });
  });

  it("gives each parallel job its own context", () => {
    const contexts = [0, 1, 2].map(
      (i) => forJob(job({ parallelGroupIndex: i, parallelGroupTotal: 3 }))[0]?.context ?? "",
    );
    expect(contexts).toEqual([
      "buildkite/widgets/Tests (1/3)",
      "buildkite/widgets/Tests (2/3)",
      "buildkite/widgets/Tests (3/3)",
    ]);
  });

  it("puts per-step statuses of a pull request build under /pr with separate_pull_request_statuses", () => {
    const s = settings({ publishCommitStatusPerStep: true, separatePullRequestStatuses: true });
    expect(forJob(job(), s, build({ pullRequest: true }))[0]?.context).toBe("buildkite/widgets/pr/Tests");
  });

  it("sets nothing per step without publish_commit_status_per_step, or with publish_commit_status off", () => {
    expect(forJob(job(), settings())).toEqual([]);
    expect(forJob(job(), settings({ publishCommitStatus: false, publishCommitStatusPerStep: true }))).toEqual([]);
  });

  it("sets nothing for jobs that are not command jobs", () => {
    for (const type of ["waiter", "manual", "trigger"]) expect(forJob(job({ type }))).toEqual([]);
  });

  it("orders a step's statuses by build, attempt and state, so a late pending never wins", () => {
    const order = (j: StatusJob) => forJob(j)[0]?.order ?? [];
    const scheduled = order(job({ state: "scheduled" }));
    const running = order(job({ state: "running" }));
    const passed = order(job({ state: "passed" }));
    const retried = order(job({ state: "scheduled", retriesCount: 1 }));
    expect(compareStatusOrder(scheduled, running)).toBeLessThan(0);
    expect(compareStatusOrder(running, passed)).toBeLessThan(0);
    expect(compareStatusOrder(passed, running)).toBeGreaterThan(0);
    expect(compareStatusOrder(passed, retried)).toBeLessThan(0);
  });

  it("adds the step's notify github_commit_status, with its context or the step's", () => {
    const j = job({ notify: [notify({ context: "ci/tests" })] });
    expect(forJob(j, settings()).map((s) => s.context)).toEqual(["ci/tests"]);
    expect(forJob(job({ notify: [notify()] }), settings()).map((s) => s.context)).toEqual(["buildkite/widgets/Tests"]);
    expect(forJob(j, perStep).map((s) => s.context)).toEqual(["buildkite/widgets/Tests", "ci/tests"]);
  });

  it("leaves a step's notification out when its if: does not hold", () => {
    const j = job({ notify: [notify({ context: "ci/tests", condition: "false" })] });
    expect(commitStatusesFor({ kind: "job", build: build(), job: j }, settings(), () => false)).toEqual([]);
  });

  it("sets nothing for a job of a build whose commit is not a full SHA", () => {
    expect(forJob(job(), perStep, build({ commit: "HEAD" }))).toEqual([]);
  });
});

describe("compareStatusOrder", () => {
  it("compares element by element, a shorter prefix first", () => {
    expect(compareStatusOrder([1, 2], [1, 3])).toBeLessThan(0);
    expect(compareStatusOrder([2], [1, 9])).toBeGreaterThan(0);
    expect(compareStatusOrder([1], [1, 0])).toBeLessThan(0);
    expect(compareStatusOrder([], [])).toBe(0);
  });
});
