import type { ManualStep, PipelineStep, ScriptStep, TriggerStep, WaiterStep } from "@conveyor/ci-rules";
import { effectiveTimeout, type PlannedJob, planJobs } from "./jobs-from-steps.js";
import type { BuildContext, JobState } from "./types.js";

function context(overrides: Partial<BuildContext> = {}): BuildContext {
  return {
    branch: "main",
    commit: "abc123",
    message: "Add the thing",
    source: "api",
    sourceEvent: null,
    sourceAction: null,
    tag: null,
    env: {},
    pullRequest: null,
    creator: null,
    author: null,
    pipeline: { slug: "web", defaultBranch: "main", id: "pipeline-1" },
    organization: { slug: "acme", id: "org-1" },
    ...overrides,
  };
}

const script = (name: string, extra: Partial<ScriptStep> = {}): ScriptStep => ({
  type: "script",
  name,
  command: `echo ${name}`,
  agent_query_rules: [],
  ...extra,
});
const wait = (extra: Partial<WaiterStep> = {}): WaiterStep => ({ type: "waiter", ...extra });
const block = (label: string, extra: Partial<ManualStep> = {}): ManualStep => ({ type: "manual", label, ...extra });
const input = (label: string, extra: Partial<ManualStep> = {}): ManualStep =>
  block(label, { is_input: true, ...extra });
const trigger = (label: string, extra: Partial<TriggerStep> = {}): TriggerStep => ({
  type: "trigger",
  label,
  pipeline: "deploy",
  async: false,
  ...extra,
});

function plan(steps: PipelineStep[], ctx: BuildContext = context()): PlannedJob[] {
  let n = 0;
  return planJobs(steps, ctx, {
    newId: () => {
      n++;
      return `j${n}`;
    },
  });
}

/** id → [state, dependencies], the shape most tests care about. */
function graph(jobs: PlannedJob[]): Record<string, [JobState, string[]]> {
  return Object.fromEntries(jobs.map((job) => [job.id, [job.state, job.dependsOn]]));
}

describe("planJobs: job types and fields", () => {
  it("plans nothing for no steps", () => {
    expect(plan([])).toEqual([]);
  });

  it("makes a script job carrying the step's settings (limited: it is in a concurrency group)", () => {
    const step = script("Test", {
      key: "test",
      command: "make test",
      agent_query_rules: ["queue=linux", "docker=true"],
      env: { CI: "true" },
      artifact_paths: "log/*;coverage/*",
      timeout_in_minutes: 30,
      priority: 5,
      concurrency: 1,
      concurrency_group: "web/test",
      soft_fail: [1, "*"],
    });
    const [job] = plan([step]);
    expect(job).toEqual({
      id: "j1",
      type: "script",
      stepPosition: 0,
      stepKey: "test",
      state: "limited",
      dependsOn: [],
      allowDependencyFailure: false,
      continueOnFailure: false,
      blockedState: null,
      isInput: false,
      softFail: [1, "*"],
      exitStatus: null,
      softFailed: false,
      brokenReason: null,
      retried: false,
      name: "Test",
      label: "Test",
      command: "make test",
      agentQueryRules: ["queue=linux", "docker=true"],
      queue: "linux",
      env: { CI: "true" },
      artifactPaths: "log/*;coverage/*",
      timeoutInMinutes: 30,
      priority: 5,
      parallelGroupIndex: null,
      parallelGroupTotal: null,
      matrix: null,
      matrixIndex: null,
      concurrency: 1,
      concurrencyGroup: "web/test",
      trigger: null,
      step,
    });
  });

  it("fills defaults for a bare script step", () => {
    const [job] = plan([script("")]);
    expect(job).toMatchObject({
      name: "",
      stepKey: null,
      queue: "default",
      env: {},
      artifactPaths: null,
      timeoutInMinutes: null,
      priority: 0,
      concurrency: null,
      concurrencyGroup: null,
      softFail: null,
    });
  });

  it("copies lists and maps rather than sharing them with the step", () => {
    const step = script("a", { agent_query_rules: ["queue=x"], env: { A: "1" }, soft_fail: [2] });
    const [job] = plan([step]);
    job?.agentQueryRules.push("changed");
    if (job) job.env.B = "2";
    expect(step.agent_query_rules).toEqual(["queue=x"]);
    expect(step.env).toEqual({ A: "1" });
    expect(job?.softFail).not.toBe(step.soft_fail);
  });

  it("makes parallel jobs with their index and total", () => {
    const jobs = plan([script("Shard", { parallelism: 3 })]);
    expect(jobs.map((j) => [j.id, j.parallelGroupIndex, j.parallelGroupTotal, j.state, j.stepPosition])).toEqual([
      ["j1", 0, 3, "scheduled", 0],
      ["j2", 1, 3, "scheduled", 0],
      ["j3", 2, 3, "scheduled", 0],
    ]);
  });

  it("gives parallelism: 1 an index and a total", () => {
    expect(plan([script("One", { parallelism: 1 })]).map((j) => [j.parallelGroupIndex, j.parallelGroupTotal])).toEqual([
      [0, 1],
    ]);
  });

  it("makes a waiter with an empty name that passes when nothing is before it", () => {
    const [job] = plan([wait({ continue_on_failure: true })]);
    expect(job).toMatchObject({
      type: "waiter",
      name: "",
      label: "",
      command: null,
      state: "passed",
      continueOnFailure: true,
      softFail: null,
    });
  });

  it("makes a block step a manual job, blocked when first, with blocked_state passed by default", () => {
    const [job] = plan([block("Deploy?")]);
    expect(job).toMatchObject({
      type: "manual",
      name: "Deploy?",
      state: "blocked",
      blockedState: "passed",
      isInput: false,
    });
  });

  it("keeps a block step's blocked_state", () => {
    expect(plan([block("Deploy?", { blocked_state: "failed" })])[0]?.blockedState).toBe("failed");
    expect(plan([block("Deploy?", { blocked_state: "running" })])[0]?.blockedState).toBe("running");
  });

  it("makes an input step a manual input job", () => {
    expect(plan([input("Release notes")])[0]).toMatchObject({ type: "manual", isInput: true, state: "blocked" });
  });

  it("makes a trigger job with its target", () => {
    const step = trigger("Deploy", {
      async: true,
      build: { branch: "main", env: { X: "1" } },
      soft_fail: true,
      concurrency: 2,
    });
    expect(plan([step])[0]).toMatchObject({
      type: "trigger",
      name: "Deploy",
      command: null,
      state: "scheduled",
      softFail: true,
      concurrency: 2,
      trigger: { pipeline: "deploy", async: true, build: { branch: "main", env: { X: "1" } } },
    });
  });

  it("gives a trigger step without build settings an empty build", () => {
    expect(plan([trigger("Go")])[0]?.trigger).toEqual({ pipeline: "deploy", async: false, build: {} });
  });

  it("makes parallel trigger jobs", () => {
    expect(plan([trigger("Fan out", { parallelism: 2 })]).map((j) => j.parallelGroupIndex)).toEqual([0, 1]);
  });

  it("numbers steps and calls newId once per job, in order", () => {
    const jobs = plan([script("a", { parallelism: 2 }), wait(), block("b"), trigger("c")]);
    expect(jobs.map((j) => [j.id, j.stepPosition])).toEqual([
      ["j1", 0],
      ["j2", 0],
      ["j3", 1],
      ["j4", 2],
      ["j5", 3],
    ]);
  });
});

describe("planJobs: implicit dependencies", () => {
  it("runs steps without barriers side by side", () => {
    expect(graph(plan([script("a"), script("b")]))).toEqual({ j1: ["scheduled", []], j2: ["scheduled", []] });
  });

  it("makes a wait step wait for the jobs before it, and the jobs after it wait for the wait step", () => {
    expect(graph(plan([script("a"), script("b", { parallelism: 2 }), wait(), script("c")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["scheduled", []],
      j3: ["scheduled", []],
      j4: ["waiting", ["j1", "j2", "j3"]],
      j5: ["waiting", ["j4"]],
    });
  });

  it("chains barriers: each waits for the jobs since the previous one and for that barrier", () => {
    expect(graph(plan([script("a"), wait(), script("b"), script("c"), wait(), script("d")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["waiting", ["j1"]],
      j3: ["waiting", ["j2"]],
      j4: ["waiting", ["j2"]],
      j5: ["waiting", ["j3", "j4", "j2"]],
      j6: ["waiting", ["j5"]],
    });
  });

  it("chains consecutive wait steps", () => {
    expect(graph(plan([script("a"), wait(), wait(), script("b")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["waiting", ["j1"]],
      j3: ["waiting", ["j2"]],
      j4: ["waiting", ["j3"]],
    });
  });

  it("passes a leading wait step at once", () => {
    expect(graph(plan([wait(), script("a")]))).toEqual({ j1: ["passed", []], j2: ["scheduled", ["j1"]] });
  });

  it("makes a block step a barrier", () => {
    expect(graph(plan([script("a"), block("ok?"), script("b")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["waiting", ["j1"]],
      j3: ["waiting", ["j2"]],
    });
  });

  it("blocks at once when the first step is a block step", () => {
    expect(graph(plan([block("ok?"), script("b")]))).toEqual({ j1: ["blocked", []], j2: ["waiting", ["j1"]] });
  });

  it("does not make the steps after an input step wait for it", () => {
    expect(graph(plan([script("a"), wait(), input("notes"), script("b"), wait(), script("c")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["waiting", ["j1"]],
      j3: ["waiting", ["j2"]],
      j4: ["waiting", ["j2"]],
      j5: ["waiting", ["j3", "j4", "j2"]],
      j6: ["waiting", ["j5"]],
    });
  });

  it("runs a leading input step beside the steps after it", () => {
    expect(graph(plan([input("notes"), script("a")]))).toEqual({ j1: ["blocked", []], j2: ["scheduled", []] });
  });
});

describe("planJobs: explicit dependencies", () => {
  it("adds the jobs of the steps named in depends_on", () => {
    const steps = [
      script("lint", { key: "lint" }),
      script("test", { key: "test", parallelism: 2 }),
      script("deploy", { depends_on: [{ step: "test", allow_failure: false }] }),
    ];
    expect(graph(plan(steps))).toMatchObject({ j4: ["waiting", ["j2", "j3"]] });
  });

  it("keeps the implicit barrier dependency next to depends_on", () => {
    const steps = [
      script("a", { key: "a" }),
      wait(),
      script("b", { depends_on: [{ step: "a", allow_failure: false }] }),
    ];
    expect(graph(plan(steps))).toMatchObject({ j3: ["waiting", ["j2", "j1"]] });
  });

  it("lets an empty depends_on skip the implicit barrier", () => {
    const steps = [script("a"), wait(), script("early", { depends_on: [] })];
    expect(graph(plan(steps))).toMatchObject({ j3: ["scheduled", []] });
  });

  it("keeps a barrier's own dependencies even with an empty depends_on", () => {
    expect(graph(plan([script("a"), wait({ depends_on: [] }), script("b")]))).toMatchObject({
      j2: ["waiting", ["j1"]],
    });
  });

  it("ignores unknown keys", () => {
    expect(graph(plan([script("a", { depends_on: [{ step: "nope", allow_failure: false }] })]))).toEqual({
      j1: ["scheduled", []],
    });
  });

  it("allows depending on a later step", () => {
    const steps = [script("a", { depends_on: [{ step: "b", allow_failure: false }] }), script("b", { key: "b" })];
    expect(graph(plan(steps))).toEqual({ j1: ["waiting", ["j2"]], j2: ["scheduled", []] });
  });

  it("ignores a step depending on itself", () => {
    const steps = [script("a", { key: "a", parallelism: 2, depends_on: [{ step: "a", allow_failure: false }] })];
    expect(graph(plan(steps))).toEqual({ j1: ["scheduled", []], j2: ["scheduled", []] });
  });

  it("does not repeat a dependency named twice", () => {
    const steps = [
      script("a", { key: "a" }),
      wait({ key: "w" }),
      script("b", {
        depends_on: [
          { step: "w", allow_failure: false },
          { step: "a", allow_failure: false },
          { step: "a", allow_failure: false },
        ],
      }),
    ];
    expect(graph(plan(steps))).toMatchObject({ j3: ["waiting", ["j2", "j1"]] });
  });

  it("records allow_failure per dependency", () => {
    const steps = [
      script("a", { key: "a" }),
      script("b", { key: "b" }),
      script("c", {
        depends_on: [
          { step: "a", allow_failure: true },
          { step: "b", allow_failure: false },
        ],
      }),
    ];
    const c = plan(steps)[2];
    expect(c?.allowFailureOf).toEqual(["j1"]);
    expect(c?.allowDependencyFailure).toBe(false);
  });

  it("leaves allowFailureOf out when no entry allows failure", () => {
    const steps = [script("a", { key: "a" }), script("c", { depends_on: [{ step: "a", allow_failure: false }] })];
    expect(plan(steps)[1]).not.toHaveProperty("allowFailureOf");
  });

  it("carries allow_dependency_failure", () => {
    expect(plan([script("a", { allow_dependency_failure: true })])[0]?.allowDependencyFailure).toBe(true);
  });

  it("depends on every step of a group named by its key", () => {
    const group = { label: "Tests", key: "tests" };
    const steps = [
      script("unit", { group }),
      script("e2e", { group, parallelism: 2 }),
      script("report", { depends_on: [{ step: "tests", allow_failure: false }] }),
    ];
    expect(graph(plan(steps))).toMatchObject({ j4: ["waiting", ["j1", "j2", "j3"]] });
  });
});

describe("planJobs: groups", () => {
  const g1 = { label: "One", key: "one" };
  const g2 = { label: "Two", key: "two" };

  it("keeps a wait inside a group to the group's own steps", () => {
    const steps = [
      script("a", { group: g1 }),
      wait({ group: g1 }),
      script("b", { group: g1 }),
      script("c", { group: g2 }),
    ];
    expect(graph(plan(steps))).toEqual({
      j1: ["scheduled", []],
      j2: ["waiting", ["j1"]],
      j3: ["waiting", ["j2"]],
      j4: ["scheduled", []],
    });
  });

  it("makes a top-level wait after groups wait for all of them", () => {
    const steps = [
      script("a", { group: g1 }),
      wait({ group: g1 }),
      script("b", { group: g1 }),
      script("c", { group: g2 }),
      wait(),
      script("d"),
    ];
    expect(graph(plan(steps))).toMatchObject({ j5: ["waiting", ["j1", "j2", "j3", "j4"]], j6: ["waiting", ["j5"]] });
  });

  it("starts a group's steps after the top-level barrier before the group", () => {
    const steps = [script("x"), wait(), script("a", { group: g1 }), wait({ group: g1 }), script("b", { group: g1 })];
    expect(graph(plan(steps))).toEqual({
      j1: ["scheduled", []],
      j2: ["waiting", ["j1"]],
      j3: ["waiting", ["j2"]],
      j4: ["waiting", ["j3", "j2"]],
      j5: ["waiting", ["j4"]],
    });
  });

  it("tells groups without keys apart by label", () => {
    const steps = [
      script("a", { group: { label: "A" } }),
      block("ok?", { group: { label: "A" } }),
      script("b", { group: { label: "B" } }),
    ];
    expect(graph(plan(steps))).toEqual({ j1: ["scheduled", []], j2: ["waiting", ["j1"]], j3: ["scheduled", []] });
  });

  it("treats a top-level step between two runs of the same group as ending the first", () => {
    const steps = [wait({ group: g1 }), script("x"), script("a", { group: g1 })];
    expect(graph(plan(steps))).toEqual({ j1: ["passed", []], j2: ["scheduled", []], j3: ["scheduled", []] });
  });
});

describe("planJobs: omitted steps", () => {
  it.each<[ScriptStep["skip"], JobState]>([
    [true, "skipped"],
    ["Not today", "skipped"],
    [false, "scheduled"],
    ["", "scheduled"],
  ])("skip: %j → %s", (skip, state) => {
    expect(plan([script("a", { skip })])[0]).toMatchObject({ state, brokenReason: null });
  });

  it.each<[string, string, JobState]>([
    ["main", "main", "scheduled"],
    ["main", "feature/x", "broken"],
    ["feature/*", "feature/x", "scheduled"],
    ["!main", "main", "broken"],
    ["!main", "develop", "scheduled"],
    ["", "anything", "scheduled"],
  ])("branches %j on branch %j → %s", (pattern, branch, state) => {
    const [job] = plan([script("a", { branch_configuration: pattern })], context({ branch }));
    expect(job?.state).toBe(state);
    expect(job?.brokenReason).toBe(state === "broken" ? "branch_mismatch" : null);
  });

  it.each<[string, JobState]>([
    ['build.branch == "main"', "scheduled"],
    ['build.branch != "main"', "broken"],
    ["build.tag != null", "broken"],
  ])("if %j → %s", (condition, state) => {
    const [job] = plan([script("a", { if: condition })]);
    expect(job?.state).toBe(state);
    expect(job?.brokenReason).toBe(state === "broken" ? "conditional_failed" : null);
  });

  it("marks a step whose if cannot be parsed or evaluated conditional_failed", () => {
    for (const condition of ["build.branch ==", "build.nope", "build.branch", '!build.branch == "x"']) {
      expect(plan([script("a", { if: condition })])[0]).toMatchObject({
        state: "broken",
        brokenReason: "conditional_failed",
      });
    }
  });

  it("checks skip before branches, and branches before if", () => {
    const ctx = context({ branch: "dev" });
    expect(plan([script("a", { skip: true, branch_configuration: "main" })], ctx)[0]?.state).toBe("skipped");
    expect(plan([script("a", { branch_configuration: "main", if: "build.nope" })], ctx)[0]?.brokenReason).toBe(
      "branch_mismatch",
    );
  });

  it("omits every parallel job of an omitted step", () => {
    expect(plan([script("a", { parallelism: 3, skip: true })]).map((j) => j.state)).toEqual([
      "skipped",
      "skipped",
      "skipped",
    ]);
  });

  it("does not let an omitted job hold up the jobs behind it", () => {
    expect(graph(plan([script("a", { if: "false" }), wait(), script("b")]))).toEqual({
      j1: ["broken", []],
      j2: ["passed", ["j1"]],
      j3: ["scheduled", ["j2"]],
    });
  });

  it("does not make an omitted wait step a barrier", () => {
    expect(graph(plan([script("a"), wait({ branch_configuration: "release" }), script("b")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["broken", []],
      j3: ["scheduled", []],
    });
  });

  it("does not make an omitted block step a barrier", () => {
    expect(graph(plan([script("a"), block("ok?", { if: "false" }), script("b")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["broken", []],
      j3: ["scheduled", []],
    });
  });

  it("lets explicit dependants of an omitted step run", () => {
    const steps = [
      script("a", { key: "a", skip: true }),
      script("b", { depends_on: [{ step: "a", allow_failure: false }] }),
    ];
    expect(graph(plan(steps))).toEqual({ j1: ["skipped", []], j2: ["scheduled", ["j1"]] });
  });

  it("omits waiters, manual and trigger steps the same way", () => {
    const jobs = plan(
      [wait({ skip: true }), block("b", { if: "false" }), trigger("t", { branch_configuration: "release" })],
      context(),
    );
    expect(jobs.map((j) => [j.state, j.brokenReason])).toEqual([
      ["skipped", null],
      ["broken", "conditional_failed"],
      ["broken", "branch_mismatch"],
    ]);
  });

  it("evaluates if against the whole build context", () => {
    const steps = [script("deploy", { if: 'build.env("DEPLOY") == "1" && build.source == "api"' })];
    expect(plan(steps, context({ env: { DEPLOY: "1" } }))[0]?.state).toBe("scheduled");
    expect(plan(steps, context({ env: {} }))[0]?.state).toBe("broken");
  });
});

describe("effectiveTimeout", () => {
  it("takes the step's timeout, else the pipeline's default, never past the pipeline's maximum", () => {
    expect(effectiveTimeout(undefined, undefined)).toBeNull();
    expect(effectiveTimeout(30, undefined)).toBe(30);
    expect(effectiveTimeout(undefined, { default: 20, maximum: null })).toBe(20);
    expect(effectiveTimeout(30, { default: 20, maximum: null })).toBe(30);
    expect(effectiveTimeout(90, { default: 20, maximum: 60 })).toBe(60);
    expect(effectiveTimeout(undefined, { default: null, maximum: 60 })).toBe(60);
    expect(effectiveTimeout(undefined, { default: 120, maximum: 60 })).toBe(60);
  });
});

describe("planJobs: matrix steps (docs/compatibility.md#build-matrix)", () => {
  const matrixStep = script("{{matrix.os}} on {{matrix.arch}}", {
    key: "build",
    command: "make OS={{matrix.os}}",
    env: { ARCH: "{{matrix.arch}}" },
    agent_query_rules: ["queue=builder-{{matrix.arch}}"],
    soft_fail: [3],
    matrix: {
      setup: { os: ["linux", "windows"], arch: ["amd64", "arm64"] },
      adjustments: [
        { with: { os: "windows", arch: "arm64" }, skip: true },
        { with: { os: "linux", arch: "arm64" }, soft_fail: true },
        { with: { os: "plan9", arch: "mips" } },
      ],
    },
  });

  it("makes one job per combination, interpolated, in order, sharing the step's key", () => {
    const jobs = plan([matrixStep]);
    expect(
      jobs.map((j) => [j.id, j.matrix, j.matrixIndex, j.label, j.command, j.env, j.queue, j.agentQueryRules]),
    ).toEqual([
      [
        "j1",
        { os: "linux", arch: "amd64" },
        0,
        "linux on amd64",
        "make OS=linux",
        { ARCH: "amd64" },
        "builder-amd64",
        ["queue=builder-amd64"],
      ],
      [
        "j2",
        { os: "linux", arch: "arm64" },
        1,
        "linux on arm64",
        "make OS=linux",
        { ARCH: "arm64" },
        "builder-arm64",
        ["queue=builder-arm64"],
      ],
      [
        "j3",
        { os: "windows", arch: "amd64" },
        2,
        "windows on amd64",
        "make OS=windows",
        { ARCH: "amd64" },
        "builder-amd64",
        ["queue=builder-amd64"],
      ],
      [
        "j4",
        { os: "plan9", arch: "mips" },
        3,
        "plan9 on mips",
        "make OS=plan9",
        { ARCH: "mips" },
        "builder-mips",
        ["queue=builder-mips"],
      ],
    ]);
    for (const job of jobs) {
      expect(job).toMatchObject({
        stepKey: "build",
        stepPosition: 0,
        parallelGroupIndex: null,
        parallelGroupTotal: null,
      });
      expect(job.step).not.toHaveProperty("matrix");
    }
  });

  it("an adjustment's soft_fail replaces the step's for its combination only", () => {
    expect(plan([matrixStep]).map((j) => j.softFail)).toEqual([[3], true, [3], [3]]);
  });

  it("all of a matrix step's jobs start together, and a wait after it waits for every one", () => {
    expect(graph(plan([matrixStep, wait(), script("after")]))).toEqual({
      j1: ["scheduled", []],
      j2: ["scheduled", []],
      j3: ["scheduled", []],
      j4: ["scheduled", []],
      j5: ["waiting", ["j1", "j2", "j3", "j4"]],
      j6: ["waiting", ["j5"]],
    });
  });

  it("depends_on the matrix step's key waits for all of its jobs", () => {
    const jobs = plan([matrixStep, script("deploy", { depends_on: [{ step: "build", allow_failure: false }] })]);
    expect(jobs[4]?.dependsOn).toEqual(["j1", "j2", "j3", "j4"]);
  });

  it("a skipped matrix step's jobs are all skipped", () => {
    expect(plan([{ ...matrixStep, skip: true }]).map((j) => j.state)).toEqual([
      "skipped",
      "skipped",
      "skipped",
      "skipped",
    ]);
  });

  it("other jobs have no matrix", () => {
    expect(plan([script("a")]).map((j) => [j.matrix, j.matrixIndex])).toEqual([[null, null]]);
  });
});
