/** Whole builds, driven the way the service will drive them: plan, then event → advance → derive, repeatedly. */
import type { PipelineStep } from "@conveyor/ci-rules";
import { type PlannedJob, planJobs } from "./jobs-from-steps.js";
import {
  advance,
  applyJobEvent,
  cancelPlan,
  deriveBuildState,
  isFinishedJobState,
  type JobEvent,
} from "./state-machine.js";
import { ACTIVE_JOB_STATES, COUNTED_JOB_STATES } from "./state-sets.js";
import type { BuildContext, DerivedBuildState, JobModel, JobState } from "./types.js";

/** A build's jobs by pipeline counter, as the counters count them (waiters aside). */
function counted(jobs: readonly JobModel[]) {
  const live = jobs.filter((j) => j.type !== "waiter" && !j.retried);
  const count = (states: readonly JobState[]) => live.filter((j) => states.includes(j.state)).length;
  return {
    scheduled: count(COUNTED_JOB_STATES.scheduled),
    running: count(COUNTED_JOB_STATES.running),
    waiting: count(COUNTED_JOB_STATES.waiting),
  };
}

const ctx: BuildContext = {
  branch: "main",
  commit: "abc",
  message: "m",
  source: "api",
  sourceEvent: null,
  sourceAction: null,
  tag: null,
  env: {},
  pullRequest: null,
  creator: null,
  author: null,
  pipeline: { slug: "web", defaultBranch: "main", id: "p" },
  organization: { slug: "acme", id: "o" },
};

const script = (key: string, extra: object = {}): PipelineStep => ({
  type: "script",
  key,
  name: key,
  command: `run ${key}`,
  agent_query_rules: [],
  ...extra,
});
const wait = (extra: object = {}): PipelineStep => ({ type: "waiter", ...extra });
const block = (key: string, extra: object = {}): PipelineStep => ({ type: "manual", key, label: key, ...extra });

/** A build under test: its jobs and the cancel flag, with helpers that behave like the service. */
class Build {
  jobs: PlannedJob[];
  cancelRequested = false;

  constructor(steps: PipelineStep[]) {
    let n = 0;
    this.jobs = planJobs(steps, ctx, {
      newId: () => {
        n++;
        return `j${n}`;
      },
    });
  }

  /** The job of the step with `key` (the first parallel job unless `index` says otherwise). */
  id(key: string, index = 0): string {
    const job = this.jobs.filter((j) => j.stepKey === key)[index];
    if (!job) throw new Error(`no job for ${key}`);
    return job.id;
  }

  stateOf(key: string, index = 0): JobState | undefined {
    return this.jobs.find((j) => j.id === this.id(key, index))?.state;
  }

  apply(key: string, ...events: JobEvent[]): this {
    const id = this.id(key);
    for (const event of events) {
      const index = this.jobs.findIndex((j) => j.id === id);
      const current = this.jobs[index];
      if (!current) throw new Error(`no job ${id}`);
      const result = applyJobEvent(current, event);
      if (!result.ok) throw new Error(`${key}: ${result.reason}`);
      this.jobs[index] = result.job;
      this.jobs = advance(this.jobs);
    }
    return this;
  }

  /** An agent runs the job to the end with `exitStatus`. */
  run(key: string, exitStatus = 0): this {
    return this.apply(key, { type: "assign" }, { type: "accept" }, { type: "start" }, { type: "finish", exitStatus });
  }

  start(key: string): this {
    return this.apply(key, { type: "assign" }, { type: "accept" }, { type: "start" });
  }

  cancel(): this {
    this.cancelRequested = true;
    const plan = cancelPlan(this.jobs);
    this.jobs = this.jobs.map((job) => {
      if (plan.cancel.includes(job.id)) return { ...job, state: "canceled" };
      if (plan.canceling.includes(job.id)) return { ...job, state: "canceling" };
      return job;
    });
    return this;
  }

  get state(): DerivedBuildState {
    return deriveBuildState(this.jobs, { cancelRequested: this.cancelRequested });
  }
}

describe("a build with a wait step", () => {
  it("runs the jobs before the wait, then the ones after, then passes", () => {
    const build = new Build([script("a"), script("b"), wait(), script("c")]);
    expect(build.state).toEqual({ state: "scheduled", blocked: false, finished: false });
    expect(counted(build.jobs)).toEqual({ scheduled: 2, running: 0, waiting: 1 });

    build.start("a");
    expect(build.state.state).toBe("running");
    expect(counted(build.jobs)).toEqual({ scheduled: 1, running: 1, waiting: 1 });

    build.apply("a", { type: "finish", exitStatus: 0 });
    expect(build.stateOf("c")).toBe("waiting");

    build.run("b");
    expect(build.stateOf("c")).toBe("scheduled");
    expect(build.state.state).toBe("running");

    build.run("c");
    expect(build.state).toEqual({ state: "passed", blocked: false, finished: true });
    expect(build.jobs.every((j) => isFinishedJobState(j.state))).toBe(true);
  });

  it("fails while another job still runs, then stops the jobs behind the wait", () => {
    const build = new Build([script("a"), script("b"), wait(), script("c")]);
    build.start("b").run("a", 1);
    expect(build.state).toEqual({ state: "failing", blocked: false, finished: false });
    expect(build.stateOf("c")).toBe("waiting_failed");

    build.apply("b", { type: "finish", exitStatus: 0 });
    expect(build.state).toEqual({ state: "failed", blocked: false, finished: true });
  });

  it("passes with a soft failure and runs what follows", () => {
    const build = new Build([script("a", { soft_fail: [3] }), wait(), script("c")]);
    build.run("a", 3);
    expect(build.stateOf("c")).toBe("scheduled");
    build.run("c");
    expect(build.state).toEqual({ state: "passed", blocked: false, finished: true });
  });

  it("runs past a failure with continue_on_failure, and still fails the build", () => {
    const build = new Build([script("a"), wait({ continue_on_failure: true }), script("c")]);
    build.run("a", 1);
    expect(build.stateOf("c")).toBe("scheduled");
    expect(build.state.state).toBe("failing");
    build.run("c");
    expect(build.state).toEqual({ state: "failed", blocked: false, finished: true });
  });

  it("runs a job with allow_dependency_failure after a failure", () => {
    const build = new Build([script("a"), wait(), script("cleanup", { allow_dependency_failure: true }), script("d")]);
    build.run("a", 2);
    expect(build.stateOf("cleanup")).toBe("scheduled");
    expect(build.stateOf("d")).toBe("waiting_failed");
    build.run("cleanup");
    expect(build.state.state).toBe("failed");
  });
});

describe("a build with a block step", () => {
  it("blocks with the block step's state, then runs on once unblocked", () => {
    const build = new Build([script("a"), block("deploy?", { blocked_state: "running" }), script("deploy")]);
    build.run("a");
    expect(build.state).toEqual({ state: "running", blocked: true, finished: false });
    expect(counted(build.jobs)).toEqual({ scheduled: 0, running: 0, waiting: 2 });

    build.apply("deploy?", { type: "unblock" });
    expect(build.stateOf("deploy?")).toBe("unblocked");
    expect(build.stateOf("deploy")).toBe("scheduled");
    expect(build.state).toEqual({ state: "running", blocked: false, finished: false });

    build.run("deploy");
    expect(build.state).toEqual({ state: "passed", blocked: false, finished: true });
  });

  it("is blocked from the start when the first step is a block step", () => {
    const build = new Build([block("go?"), script("a")]);
    expect(build.state).toEqual({ state: "passed", blocked: true, finished: false });
  });

  it("cancels straight to canceled while blocked", () => {
    const build = new Build([script("a"), block("go?"), script("b")]);
    build.run("a").cancel();
    expect(build.state).toEqual({ state: "canceled", blocked: false, finished: true });
    expect(build.stateOf("go?")).toBe("canceled");
    expect(build.stateOf("b")).toBe("canceled");
  });

  it("never blocks when the failure came first", () => {
    const build = new Build([script("a"), block("go?"), script("b")]);
    build.run("a", 1);
    expect(build.stateOf("go?")).toBe("blocked_failed");
    expect(build.state).toEqual({ state: "failed", blocked: false, finished: true });
  });

  it("does not block the build at an input step", () => {
    const build = new Build([script("a"), block("notes", { is_input: true }), script("b")]);
    build.run("a");
    expect(build.stateOf("notes")).toBe("blocked");
    expect(build.state).toEqual({ state: "running", blocked: false, finished: false });
    build.apply("notes", { type: "unblock" });
    build.run("b");
    expect(build.state).toEqual({ state: "passed", blocked: false, finished: true });
  });
});

describe("canceling a build", () => {
  it("is canceled at once when nothing runs on an agent", () => {
    const build = new Build([script("a"), wait(), script("b")]);
    build.cancel();
    expect(build.state).toEqual({ state: "canceled", blocked: false, finished: true });
  });

  it("goes canceling → canceled once the agent stops the running job", () => {
    const build = new Build([script("a"), script("b"), wait(), script("c")]);
    build.start("a").cancel();
    expect(build.stateOf("a")).toBe("canceling");
    expect(build.stateOf("b")).toBe("canceled");
    expect(build.stateOf("c")).toBe("canceled");
    expect(build.state).toEqual({ state: "canceling", blocked: false, finished: false });
    expect(ACTIVE_JOB_STATES).toContain("canceling");

    build.apply("a", { type: "finish", exitStatus: 143 });
    expect(build.stateOf("a")).toBe("canceled");
    expect(build.state).toEqual({ state: "canceled", blocked: false, finished: true });
  });

  it("accepts the agent's canceled confirmation too", () => {
    const build = new Build([script("a")]);
    build.start("a").cancel().apply("a", { type: "canceled" });
    expect(build.state).toEqual({ state: "canceled", blocked: false, finished: true });
  });

  it("keeps a finished job's outcome", () => {
    const build = new Build([script("a"), script("b")]);
    build.run("a").cancel();
    expect(build.stateOf("a")).toBe("passed");
    expect(build.stateOf("b")).toBe("canceled");
  });
});

describe("timeouts and expiry", () => {
  it("fails the build when a job times out", () => {
    const build = new Build([script("a"), wait(), script("b")]);
    build.start("a").apply("a", { type: "timeout" });
    expect(build.state.state).toBe("running");
    build.apply("a", { type: "finish", exitStatus: -1 });
    expect(build.stateOf("a")).toBe("timed_out");
    expect(build.stateOf("b")).toBe("waiting_failed");
    expect(build.state).toEqual({ state: "failed", blocked: false, finished: true });
  });

  it("fails the build when a job expires before an agent takes it", () => {
    const build = new Build([script("a")]);
    build.apply("a", { type: "expire" });
    expect(build.state).toEqual({ state: "failed", blocked: false, finished: true });
  });
});

describe("omitted steps", () => {
  it("is not_run when every step is omitted", () => {
    const build = new Build([
      script("a", { if: "false" }),
      wait({ skip: true }),
      script("b", { branch_configuration: "x" }),
    ]);
    expect(build.state).toEqual({ state: "not_run", blocked: false, finished: true });
  });

  it("runs what is left when some steps are omitted", () => {
    const build = new Build([script("a", { skip: "flaky" }), wait(), script("b")]);
    expect(build.stateOf("b")).toBe("scheduled");
    build.run("b");
    expect(build.state).toEqual({ state: "passed", blocked: false, finished: true });
  });
});

describe("parallel jobs", () => {
  it("waits for every parallel job before moving past a wait", () => {
    const build = new Build([script("shard", { parallelism: 2 }), wait(), script("report")]);
    expect(build.jobs.filter((j) => j.stepKey === "shard").map((j) => j.state)).toEqual(["scheduled", "scheduled"]);
    build.run("shard");
    expect(build.stateOf("report")).toBe("waiting");
    const second = build.id("shard", 1);
    build.jobs = build.jobs.map((j) => (j.id === second ? { ...j, state: "passed", exitStatus: 0 } : j));
    build.jobs = advance(build.jobs);
    expect(build.stateOf("report")).toBe("scheduled");
  });
});
