import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService, JobEventType } from "@conveyor/proto/builds";
import { newId } from "@conveyor/runtime";
import { createMemoryBuildsService } from "../testing.js";

// The step RPCs over the in-memory builds service: a running job reads, relabels and cancels the steps of its own
// build, by id or key; a job of another build, a finished job and an unknown step reach nothing.
async function setup() {
  const memory = createMemoryBuildsService();
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, memory.service)),
  );
  const testsStep = newId();
  const { jobs } = await memory.seedBuild({
    jobs: [
      { stepKey: "caller", label: "Caller", name: "Caller" },
      {
        stepKey: "tests",
        stepId: testsStep,
        label: "Tests",
        name: "Tests",
        parallelGroupIndex: 0,
        parallelGroupTotal: 2,
      },
      {
        stepKey: "tests",
        stepId: testsStep,
        label: "Tests",
        name: "Tests",
        parallelGroupIndex: 1,
        parallelGroupTotal: 2,
      },
    ],
  });
  const [caller, first, second] = jobs.sort((a, b) => a.stepPosition - b.stepPosition);
  if (!caller || !first || !second) throw new Error("jobs missing");
  const run = async (jobId: string, agentId: string) => {
    await client.transitionJob({ jobId, event: JobEventType.ASSIGN, agent: { id: agentId, name: agentId } });
    await client.transitionJob({ jobId, event: JobEventType.ACCEPT, agentId });
    await client.transitionJob({ jobId, event: JobEventType.START, agentId });
  };
  await run(caller.id, "agent-1");
  return { memory, client, caller, first, second, testsStep, run };
}

const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("expected a refusal");
};

describe("step RPCs", () => {
  it("get a step by id or key, with its state, outcome and definition", async () => {
    const { client, caller, testsStep } = await setup();
    const byKey = await client.getStep({ ref: { jobId: caller.id, step: "tests" } });
    expect(byKey.step).toMatchObject({ id: testsStep, key: "tests", label: "Tests", type: "script", state: "ready" });
    expect(byKey.step?.outcome).toBe("neutral");
    expect(byKey.step?.jobs).toHaveLength(2);
    expect(JSON.parse(byKey.step?.definitionJson ?? "")).toMatchObject({ command: "make test" });
    const byId = await client.getStep({ ref: { jobId: caller.id, step: testsStep } });
    expect(byId.step?.id).toBe(testsStep);
    const own = await client.getStep({ ref: { jobId: caller.id, step: "caller" } });
    expect(own.step?.state).toBe("running");
  });

  it("relabels every job of the step, appends, and applies an idempotency uuid once", async () => {
    const { client, caller, memory, first, second } = await setup();
    await client.updateStep({ ref: { jobId: caller.id, step: "tests" }, label: "Unit", idempotencyUuid: "u-1" });
    const appended = await client.updateStep({
      ref: { jobId: caller.id, step: "tests" },
      label: " (again)",
      append: true,
      idempotencyUuid: "u-2",
    });
    expect(appended.step?.label).toBe("Unit (again)");
    // The agent's retry of the same update changes nothing.
    await client.updateStep({
      ref: { jobId: caller.id, step: "tests" },
      label: " (again)",
      append: true,
      idempotencyUuid: "u-2",
    });
    for (const id of [first.id, second.id]) {
      const job = await memory.repos.builds.findJob(id);
      expect(job).toMatchObject({ label: "Unit (again)", name: "Unit (again)" });
    }
    expect((await memory.repos.builds.findJob(caller.id))?.label).toBe("Caller");
  });

  it("refuses a label past the bound and changes nothing", async () => {
    const { client, caller, memory, first } = await setup();
    const code = await codeOf(client.updateStep({ ref: { jobId: caller.id, step: "tests" }, label: "x".repeat(1001) }));
    expect(code).toBe(Code.InvalidArgument);
    expect((await memory.repos.builds.findJob(first.id))?.label).toBe("Tests");
  });

  it("cancels the step's unfinished jobs: waiting ones at once, running ones through canceling", async () => {
    const { client, caller, first, second, run } = await setup();
    await run(first.id, "agent-2");
    const res = await client.cancelStep({ ref: { jobId: caller.id, step: "tests" } });
    const states = Object.fromEntries((res.step?.jobs ?? []).map((j) => [j.id, j.state]));
    expect(states).toEqual({ [first.id]: "canceling", [second.id]: "canceled" });
    expect(res.step?.outcome).toBe("hard_failed");
    const callerNow = await client.getJob({ jobId: caller.id });
    expect(callerNow.job?.state).toBe("running");
  });

  it("reaches nothing through a finished job, another build's job or an unknown step", async () => {
    const { client, caller, memory } = await setup();
    expect(await codeOf(client.getStep({ ref: { jobId: caller.id, step: "nope" } }))).toBe(Code.NotFound);
    expect(await codeOf(client.getStep({ ref: { jobId: newId(), step: "tests" } }))).toBe(Code.NotFound);
    expect(await codeOf(client.getStep({ ref: { jobId: "", step: "tests" } }))).toBe(Code.InvalidArgument);
    const other = await memory.seedBuild({ jobs: [{ stepKey: "tests" }] });
    const otherJob = other.jobs[0];
    if (!otherJob) throw new Error("no job");
    // The other build's scheduled job is not running: it reaches nothing, not even its own build's steps.
    expect(await codeOf(client.getStep({ ref: { jobId: otherJob.id, step: "tests" } }))).toBe(Code.FailedPrecondition);
    await client.transitionJob({ jobId: caller.id, event: JobEventType.FINISH, exitStatus: 0, agentId: "agent-1" });
    for (const call of [
      client.getStep({ ref: { jobId: caller.id, step: "tests" } }),
      client.updateStep({ ref: { jobId: caller.id, step: "tests" }, label: "x" }),
      client.cancelStep({ ref: { jobId: caller.id, step: "tests" } }),
    ])
      expect(await codeOf(call)).toBe(Code.FailedPrecondition);
  });

  it("takes a running job's promised failure: the build fails at once, the job finishes failed with the promise", async () => {
    const { client, caller, memory } = await setup();
    const promised = await client.promiseJobFailure({ jobId: caller.id, exitStatus: 3, reason: "tests failed" });
    expect(promised.job?.state).toBe("running");
    const stored = await memory.repos.builds.findJob(caller.id);
    expect(stored).toMatchObject({ promisedExitStatus: 3, promisedFailureReason: "tests failed" });
    const build = await memory.repos.builds.findBuildById(stored?.buildId ?? "");
    expect(build?.state).toBe("failing");
    // The same promise again changes nothing; another is refused.
    await client.promiseJobFailure({ jobId: caller.id, exitStatus: 3 });
    expect(await codeOf(client.promiseJobFailure({ jobId: caller.id, exitStatus: 4 }))).toBe(Code.AlreadyExists);
    for (const exitStatus of [0, -1, 256])
      expect(await codeOf(client.promiseJobFailure({ jobId: caller.id, exitStatus }))).toBe(Code.InvalidArgument);
    const finished = await client.transitionJob({
      jobId: caller.id,
      event: JobEventType.FINISH,
      exitStatus: 0,
      agentId: "agent-1",
    });
    expect(finished.job).toMatchObject({ state: "failed", exitStatus: 3 });
    expect(await codeOf(client.promiseJobFailure({ jobId: caller.id, exitStatus: 3 }))).toBe(Code.FailedPrecondition);
  });

  it("cancels a build through a running job of it only", async () => {
    const { client, caller, memory } = await setup();
    const other = await memory.seedBuild({ jobs: [{}] });
    const build = other.build;
    expect(
      await codeOf(client.cancelBuild({ pipelineId: build.pipelineId, number: build.number, jobId: caller.id })),
    ).toBe(Code.NotFound);
    const callerJob = await memory.repos.builds.findJob(caller.id);
    const own = await memory.repos.builds.findBuildById(callerJob?.buildId ?? "");
    if (!own) throw new Error("no build");
    const res = await client.cancelBuild({ pipelineId: own.pipelineId, number: own.number, jobId: caller.id });
    expect(res.build?.state).toBe("canceling");
  });
});
