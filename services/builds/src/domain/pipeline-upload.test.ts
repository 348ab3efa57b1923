import { parsePipelineYaml } from "@conveyor/ci-rules";
import { aBuild, aJob } from "../test-support.js";
import { conditionContext } from "./build.js";
import type { Job } from "./job.js";
import { keysOf, planUpload, UPLOAD_LIMITS, type UploadInput } from "./pipeline-upload.js";
import { advance } from "./state-machine.js";

const build = aBuild({ branch: "main" });

function stepsOf(yaml: string, existing: readonly Job[] = []) {
  const parsed = parsePipelineYaml(yaml, { existingKeys: [...keysOf(existing).keys()] });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed;
}

/** A build: upload step (running), then a wait, then deploy behind it. */
function buildJobs(): Job[] {
  return [
    aJob({ id: "up", stepPosition: 0, stepKey: "generate", state: "running" }),
    aJob({ id: "w", type: "waiter", stepPosition: 1, state: "waiting", dependsOn: ["up"] }),
    aJob({ id: "deploy", stepPosition: 2, stepKey: "deploy", state: "pending", dependsOn: ["w"] }),
  ];
}

function plan(yaml: string, overrides: Partial<UploadInput> = {}) {
  const jobs = overrides.jobs ?? buildJobs();
  const parsed = stepsOf(yaml, jobs);
  let n = 0;
  const result = planUpload({
    uploader: jobs.find((j) => j.id === "up") as Job,
    jobs,
    steps: parsed.steps,
    env: parsed.env,
    context: conditionContext(build),
    timeouts: { default: null, maximum: null },
    replace: false,
    newId: () => `new-${n++}`,
    ...overrides,
  });
  if (!result.ok) throw new Error(result.problem);
  return result.plan;
}

describe("planUpload", () => {
  it("places the new steps after the uploader, in order, before the next step", () => {
    const { jobs } = plan("steps:\n  - command: a\n  - command: b\n  - command: c\n");
    const positions = jobs.map((j) => j.stepPosition);
    expect(positions).toEqual([...positions].sort((x, y) => x - y));
    expect(positions[0]).toBeGreaterThan(0);
    expect(positions[2]).toBeLessThan(1);
  });

  it("leaves new jobs pending: the build's next reconcile decides when they run", () => {
    const { jobs } = plan("steps:\n  - command: a\n  - wait\n  - command: b\n");
    expect(jobs.map((j) => [j.id, j.state, j.dependsOn])).toEqual([
      ["new-0", "pending", []],
      // An uploaded wait waits for every step before it: the uploader too.
      ["new-1", "pending", ["up", "new-0"]],
      ["new-2", "pending", ["new-1"]],
    ]);
  });

  it("makes an uploaded wait wait for the steps running beside the uploader since the last wait, not before it", () => {
    const jobs = [
      aJob({ id: "early", stepPosition: 0, state: "passed" }),
      aJob({ id: "w0", type: "waiter", stepPosition: 1, state: "passed", dependsOn: ["early"] }),
      aJob({ id: "lint", stepPosition: 2, state: "running", dependsOn: ["w0"] }),
      aJob({
        id: "first-up",
        stepPosition: 3,
        state: "failed",
        retried: true,
        retriedInJobId: "up",
        dependsOn: ["w0"],
      }),
      aJob({ id: "up", stepPosition: 3, state: "running", retrySource: { jobId: "first-up", retryType: "automatic" } }),
      aJob({ id: "w1", type: "waiter", stepPosition: 4, state: "waiting", dependsOn: ["lint", "first-up", "w0"] }),
    ];
    const { jobs: added } = plan("steps:\n  - command: a\n  - wait\n  - command: b\n", { jobs });
    expect(added.map((j) => j.dependsOn)).toEqual([["w0"], ["lint", "first-up", "new-0", "w0"], ["new-1"]]);
  });

  it("makes the jobs that waited for the uploader wait for every new job too", () => {
    const { waitFor } = plan("steps:\n  - command: a\n  - wait\n  - command: b\n");
    expect(waitFor).toEqual([{ id: "w", state: "waiting", dependsOn: ["up", "new-0", "new-1", "new-2"] }]);
  });

  it("also counts dependants of the job the uploader is an attempt of", () => {
    const jobs = [
      aJob({ id: "first", stepPosition: 0, state: "failed", retried: true, retriedInJobId: "up" }),
      aJob({ id: "up", stepPosition: 0, state: "running", retrySource: { jobId: "first", retryType: "automatic" } }),
      aJob({ id: "after", stepPosition: 1, state: "waiting", dependsOn: ["first"] }),
    ];
    const { waitFor } = plan("steps:\n  - command: a\n", { jobs });
    expect(waitFor).toEqual([{ id: "after", state: "waiting", dependsOn: ["first", "new-0"] }]);
  });

  it("resolves depends_on against steps already in the build", () => {
    const jobs = [...buildJobs(), aJob({ id: "lint", stepPosition: 3, stepKey: "lint", state: "passed" })];
    const { jobs: added } = plan("steps:\n  - command: a\n    depends_on: lint\n", { jobs });
    expect(added[0]?.dependsOn).toEqual(["lint"]);
  });

  it("gives the upload's top-level env to its command steps, under their own", () => {
    const { jobs } = plan("env:\n  A: top\n  B: top\nsteps:\n  - command: a\n    env:\n      B: own\n");
    expect(jobs[0]?.env).toEqual({ A: "top", B: "own" });
  });

  it("evaluates conditionals and branch filters against the build", () => {
    const { jobs } = plan(
      "steps:\n  - command: a\n    if: build.branch == 'main'\n  - command: b\n    branches: release/*\n",
    );
    expect(jobs.map((j) => [j.state, j.brokenReason])).toEqual([
      ["pending", null],
      ["broken", "branch_mismatch"],
    ]);
  });

  it("applies the pipeline's timeouts", () => {
    const { jobs } = plan("steps:\n  - command: a\n  - command: b\n    timeout_in_minutes: 90\n", {
      timeouts: { default: 10, maximum: 60 },
    });
    expect(jobs.map((j) => j.timeoutInMinutes)).toEqual([10, 60]);
  });

  it("with replace, drops the jobs that have not started and nothing else", () => {
    const jobs = [
      aJob({ id: "done", stepPosition: 0, state: "passed" }),
      aJob({ id: "up", stepPosition: 1, state: "running" }),
      aJob({ id: "busy", stepPosition: 1, state: "running", parallelGroupIndex: 1 }),
      aJob({ id: "queued", stepPosition: 2, state: "scheduled" }),
      aJob({ id: "taken", stepPosition: 2, state: "assigned", parallelGroupIndex: 1 }),
      aJob({ id: "gate", type: "manual", stepPosition: 3, state: "blocked" }),
      aJob({ id: "later", stepPosition: 4, state: "waiting", dependsOn: ["up"] }),
    ];
    const result = plan("steps:\n  - command: a\n", { jobs, replace: true });
    expect(result.remove).toEqual([
      { id: "queued", state: "scheduled" },
      { id: "gate", state: "blocked" },
      { id: "later", state: "waiting" },
    ]);
    expect(result.waitFor).toEqual([]);
  });

  it("renumbers the build's steps when nested uploads leave no room", () => {
    const jobs = [
      aJob({ id: "a", stepPosition: 0, state: "passed" }),
      aJob({ id: "up", stepPosition: 0.5, state: "running" }),
      aJob({ id: "b", stepPosition: 0.5 + 1e-8, state: "waiting", dependsOn: ["up"] }),
      aJob({ id: "c", stepPosition: 7, state: "waiting", dependsOn: ["b"] }),
    ];
    const result = plan("steps:\n  - command: x\n  - command: y\n", { jobs });
    expect(result.renumber).toEqual([
      { id: "up", stepPosition: 1 },
      { id: "b", stepPosition: 2 },
      { id: "c", stepPosition: 3 },
    ]);
    expect(result.jobs.map((j) => j.stepPosition)).toEqual([1 + 1 / 3, 1 + 2 / 3]);
  });

  it("refuses more steps or jobs than the limits", () => {
    const many = `steps:\n${"  - command: x\n".repeat(UPLOAD_LIMITS.maxSteps + 1)}`;
    expect(() => plan(many)).toThrow(/at most 500 steps/);
    const wide = `steps:\n${"  - command: x\n    parallelism: 500\n".repeat(5)}`;
    expect(() => plan(wide)).toThrow(/at most 2000 jobs/);
    const full = Array.from({ length: UPLOAD_LIMITS.maxBuildJobs - 1 }, (_, i) =>
      aJob({ id: i === 0 ? "up" : `j${i}`, stepPosition: i, state: i === 0 ? "running" : "passed" }),
    );
    expect(() => plan("steps:\n  - command: a\n  - command: b\n", { jobs: full })).toThrow(/at most 4000 jobs/);
  });

  it("once applied, the build runs the new jobs before what waited for the uploader", () => {
    const jobs = buildJobs();
    const result = plan("steps:\n  - command: a\n  - command: b\n", { jobs });
    const waits = new Map(result.waitFor.map((w) => [w.id, w.dependsOn]));
    const applied = [...jobs.map((j) => ({ ...j, dependsOn: waits.get(j.id) ?? j.dependsOn })), ...result.jobs];
    const afterUpload = advance(applied);
    expect(afterUpload.filter((j) => j.id.startsWith("new")).map((j) => j.state)).toEqual(["scheduled", "scheduled"]);
    const uploaderDone = advance(afterUpload.map((j) => (j.id === "up" ? { ...j, state: "passed" as const } : j)));
    expect(uploaderDone.find((j) => j.id === "w")?.state).toBe("waiting");
    const allDone = advance(uploaderDone.map((j) => (j.id.startsWith("new") ? { ...j, state: "passed" as const } : j)));
    expect(allDone.find((j) => j.id === "w")?.state).toBe("passed");
    expect(allDone.find((j) => j.id === "deploy")?.state).toBe("scheduled");
  });
});
