import { randomUUID } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { Db } from "mongodb";
import type { BuildsParts } from "../builds-context.js";
import { createMongoBuildRepository } from "../store/build-repository.js";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";

// Dispatch (list, assign, accept, unassign, stale assignments) and the queue metrics, through the Connect client
// over the real MongoDB-wire server. Dispatch queries read every job of a database, so the tests that depend on
// what else is queued get a database of their own.
const databases = testDatabases("it_dispatch");
const allParts: Array<BuildsParts> = [];

beforeAll(() => databases.connect());
afterAll(async () => {
  for (const parts of allParts) await parts.duties.republishCounts();
  await databases.close();
});

/** A builds service over `db` (a new database when absent); `now` is its clock. */
async function openService(now?: () => Date, db = databases.create()) {
  const served = await openBuildsService(db, now ? { now } : {});
  allParts.push(served.parts);
  return served;
}

const pipelineOf = pipelineFromYaml;

const agent = (n: number | string, tags: string[] = [`n=${n}`]) => ({
  id: `agent-${n}`,
  name: `builder-${n}`,
  hostname: `host-${n}`,
  metaData: tags,
});

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

async function newBuild(client: Client, p: Pipeline) {
  const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main", organizationSlug: "acme" });
  if (!build) throw new Error("no build");
  return build;
}

const jobByName = (build: { jobs: Array<{ name: string; id: string }> }, name: string) => {
  const job = build.jobs.find((j) => j.name === name);
  if (!job) throw new Error(`no job ${name}`);
  return job.id;
};

describe("dispatch", () => {
  let client: Client;
  /** A second service over the same database, as a second process of the builds service would be. */
  let twin: Client;
  let db: Db;
  beforeAll(async () => {
    ({ client, db } = await openService());
    ({ client: twin } = await openService(undefined, db));
  });

  it("lists scheduled command jobs by priority, then by how long they have been runnable, up to the limit", async () => {
    let clock = Date.parse("2031-03-01T10:00:00Z");
    const { client: c } = await openService(() => new Date(clock));
    const p = pipelineOf("steps: [{label: x, command: x}]", { clusterId: "cluster-1" });
    const step = (label: string, priority: number) =>
      pipelineOf(`steps:\n  - {label: ${label}, command: run, priority: ${priority}, agents: {queue: q-${label}}}`, {
        id: p.id,
        organizationId: p.organizationId,
        clusterId: "cluster-1",
      });
    const at: Record<string, number> = {};
    const queue = async (label: string, priority: number) => {
      at[label] = clock;
      await newBuild(c, step(label, priority));
      clock += 1000;
    };
    await queue("low-old", 0);
    await queue("high-old", 5);
    // Not dispatchable: an assigned job (however high its priority), a trigger job, a job behind a wait step.
    const other = await newBuild(
      c,
      pipelineOf(
        "steps:\n  - {label: taken, command: run, priority: 9}\n  - trigger: elsewhere\n  - wait\n  - {label: later, command: run, priority: 9}",
        { id: p.id, organizationId: p.organizationId },
      ),
    );
    expect(other.jobs.map((j) => j.state)).toEqual(["scheduled", "scheduled", "waiting", "waiting"]);
    await c.assignJob({ jobId: jobByName(other, "taken"), agent: agent(1) });
    clock += 1000;
    await queue("high-new", 5);
    await queue("low-new", 0);
    await queue("negative", -1);

    const all = await c.listDispatchableJobs({});
    const names = ["high-old", "high-new", "low-old", "low-new", "negative"];
    expect(all.jobs.map((j) => j.agentQueryRules)).toEqual(names.map((n) => [`queue=q-${n}`]));
    expect(all.jobs.map((j) => j.priority)).toEqual([5, 5, 0, 0, -1]);
    expect(all.jobs.map((j) => (j.runnableAt ? timestampDate(j.runnableAt).getTime() : 0))).toEqual(
      names.map((n) => at[n]),
    );
    for (const job of all.jobs) expect(job).toMatchObject({ organizationId: p.organizationId, clusterId: "cluster-1" });

    const limited = await c.listDispatchableJobs({ limit: 3 });
    expect(limited.jobs.map((j) => j.id)).toEqual(all.jobs.slice(0, 3).map((j) => j.id));
  });

  it("assigns a job to exactly one of ten agents asking at once through two processes, and keeps its tags", async () => {
    const build = await newBuild(client, pipelineOf("steps: [{label: a, command: a}]"));
    const jobId = build.jobs[0]?.id ?? "";
    const agents = Array.from({ length: 10 }, (_, i) => agent(i, [`queue=default`, `slot=${i}`]));
    const results = await Promise.allSettled(
      agents.map((a, i) => (i % 2 === 0 ? client : twin).assignJob({ jobId, agent: a })),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect(ConnectError.from(r.reason).code).toBe(Code.FailedPrecondition);
    }
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<Client["assignJob"]>>>).value.job?.agent;
    const chosen = agents.find((a) => a.id === winner?.id);
    expect(chosen).toBeDefined();
    const { job } = await client.getJob({ jobId });
    expect(job?.state).toBe("assigned");
    expect(job?.agent).toMatchObject({
      id: chosen?.id,
      name: chosen?.name,
      hostname: chosen?.hostname,
      metaData: chosen?.metaData,
    });
  });

  it("refuses to assign without an agent, an unknown job, or a job that is not scheduled", async () => {
    const build = await newBuild(client, pipelineOf("steps: [{label: a, command: a}, wait, {label: b, command: b}]"));
    const [first, , behindWait] = build.jobs;
    expect(await codeOf(client.assignJob({ jobId: first?.id ?? "" }))).toBe(Code.InvalidArgument);
    expect(await codeOf(client.assignJob({ jobId: first?.id ?? "", agent: { id: "" } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(client.assignJob({ jobId: randomUUID(), agent: agent(1) }))).toBe(Code.NotFound);
    expect(await codeOf(client.assignJob({ jobId: behindWait?.id ?? "", agent: agent(1) }))).toBe(
      Code.FailedPrecondition,
    );
    expect((await client.getJob({ jobId: behindWait?.id ?? "" })).job?.agent).toBeUndefined();
    expect((await client.getJob({ jobId: first?.id ?? "" })).job?.state).toBe("scheduled");
  });

  it("lets only the assigned agent accept, answers a repeated accept the same, and refuses another agent", async () => {
    const build = await newBuild(client, pipelineOf("steps: [{label: a, command: a}]"));
    const jobId = build.jobs[0]?.id ?? "";
    expect(await codeOf(client.acceptJob({ jobId, agentId: "agent-1" }))).toBe(Code.NotFound);
    await client.assignJob({ jobId, agent: agent(1) });
    // Another agent's job is as one that does not exist to an agent accepting it.
    expect(await codeOf(client.acceptJob({ jobId, agentId: "agent-2" }))).toBe(Code.NotFound);
    expect(await codeOf(client.acceptJob({ jobId, agentId: "" }))).toBe(Code.InvalidArgument);
    expect((await client.getJob({ jobId })).job?.state).toBe("assigned");

    const first = await client.acceptJob({ jobId, agentId: "agent-1" });
    expect(first.job).toMatchObject({ id: jobId, state: "accepted", agent: { id: "agent-1" } });
    expect(first.env.BUILDKITE_JOB_ID).toBe(jobId);
    const again = await client.acceptJob({ jobId, agentId: "agent-1" });
    expect(again.job).toMatchObject({ id: jobId, state: "accepted", agent: { id: "agent-1" } });
    expect(again.env).toEqual(first.env);
    expect(await codeOf(client.acceptJob({ jobId, agentId: "agent-2" }))).toBe(Code.NotFound);
    expect((await client.getJob({ jobId })).job?.agent?.id).toBe("agent-1");
    expect(await codeOf(client.acceptJob({ jobId: randomUUID(), agentId: "agent-1" }))).toBe(Code.NotFound);
  });

  it("answers a repeated start of a running job by its agent the same, and refuses it from another agent", async () => {
    const build = await newBuild(client, pipelineOf("steps: [{label: a, command: a}]"));
    const jobId = build.jobs[0]?.id ?? "";
    await client.assignJob({ jobId, agent: agent(1) });
    await client.acceptJob({ jobId, agentId: "agent-1" });
    const first = await client.transitionJob({ jobId, event: JobEventType.START, agentId: "agent-1" });
    expect(first.job?.state).toBe("running");
    // The answer to the first start was lost (a server killed mid-call): the agent starts it again.
    const again = await client.transitionJob({ jobId, event: JobEventType.START, agentId: "agent-1" });
    expect(again.job).toMatchObject({ id: jobId, state: "running", startedAt: first.job?.startedAt });
    expect(await codeOf(client.transitionJob({ jobId, event: JobEventType.START, agentId: "agent-2" }))).toBe(
      Code.FailedPrecondition,
    );
    await client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus: 0, agentId: "agent-1" });
    expect(await codeOf(client.transitionJob({ jobId, event: JobEventType.START, agentId: "agent-1" }))).toBe(
      Code.FailedPrecondition,
    );
  });

  it("returns an unassigned job to the queue without its agent, for another agent to take", async () => {
    const build = await newBuild(client, pipelineOf("steps: [{label: a, command: a}]"));
    const jobId = build.jobs[0]?.id ?? "";
    expect(await codeOf(client.transitionJob({ jobId, event: JobEventType.UNASSIGN }))).toBe(Code.FailedPrecondition);
    await client.assignJob({ jobId, agent: agent(1) });
    expect(await codeOf(client.transitionJob({ jobId, event: JobEventType.UNASSIGN, agentId: "agent-2" }))).toBe(
      Code.FailedPrecondition,
    );
    const { job } = await client.transitionJob({ jobId, event: JobEventType.UNASSIGN, agentId: "agent-1" });
    expect(job?.state).toBe("scheduled");
    expect(job?.agent).toBeUndefined();
    const stored = (await client.getJob({ jobId })).job;
    expect(stored?.state).toBe("scheduled");
    expect(stored?.agent).toBeUndefined();
    expect(await codeOf(client.acceptJob({ jobId, agentId: "agent-1" }))).toBe(Code.NotFound);
    await client.assignJob({ jobId, agent: agent(2) });
    const accepted = await client.acceptJob({ jobId, agentId: "agent-2" });
    expect(accepted.job?.state).toBe("accepted");
    // Accepted, it no longer goes back.
    expect(await codeOf(client.transitionJob({ jobId, event: JobEventType.UNASSIGN }))).toBe(Code.FailedPrecondition);
  });

  it("changes a stored job held by an agent only under that agent's guard", async () => {
    const repo = await createMongoBuildRepository(db);
    const build = await newBuild(client, pipelineOf("steps: [{label: a, command: a}]"));
    const jobId = build.jobs[0]?.id ?? "";
    await client.assignJob({ jobId, agent: agent(1) });
    await client.acceptJob({ jobId, agentId: "agent-1" });
    expect(await repo.updateJob(jobId, "accepted", { state: "running" }, { agentId: "agent-2" })).toBeNull();
    expect((await client.getJob({ jobId })).job?.state).toBe("accepted");
    expect(await repo.updateJob(jobId, "assigned", { state: "running" }, { agentId: "agent-1" })).toBeNull();
    const updated = await repo.updateJob(jobId, "accepted", { state: "running" }, { agentId: "agent-1" });
    expect(updated).toMatchObject({ id: jobId, state: "running", agent: { id: "agent-1" } });
  });

  it("requeues assignments older than the timeout and leaves newer and accepted ones", async () => {
    let clock = Date.parse("2031-05-01T08:00:00Z");
    const { client: c, parts } = await openService(() => new Date(clock));
    const build = await newBuild(
      c,
      pipelineOf("steps: [{label: old, command: a}, {label: accepted, command: b}, {label: recent, command: c}]"),
    );
    const [old, accepted, recent] = ["old", "accepted", "recent"].map((n) => jobByName(build, n));
    await c.assignJob({ jobId: old ?? "", agent: agent(1) });
    await c.assignJob({ jobId: accepted ?? "", agent: agent(2) });
    await c.acceptJob({ jobId: accepted ?? "", agentId: "agent-2" });
    clock += 50_000;
    await c.assignJob({ jobId: recent ?? "", agent: agent(3) });
    clock += 10_000;

    expect(await parts.duties.requeueStale(30_000)).toBe(1);
    const state = async (jobId = "") => {
      const { job } = await c.getJob({ jobId });
      return { state: job?.state, agent: job?.agent?.id };
    };
    expect(await state(old)).toEqual({ state: "scheduled", agent: undefined });
    expect(await state(accepted)).toEqual({ state: "accepted", agent: "agent-2" });
    expect(await state(recent)).toEqual({ state: "assigned", agent: "agent-3" });
    expect((await c.listDispatchableJobs({})).jobs.map((j) => j.id)).toEqual([old]);

    expect(await parts.duties.requeueStale(30_000)).toBe(0);
    expect(await parts.duties.requeueStale(5_000)).toBe(1);
    expect(await state(recent)).toEqual({ state: "scheduled", agent: undefined });
    expect(await state(accepted)).toEqual({ state: "accepted", agent: "agent-2" });
  });
});

describe("queue metrics", () => {
  let client: Client;
  beforeAll(async () => {
    ({ client } = await openService());
  });

  const run = async (jobId: string, upTo: "assigned" | "accepted" | "running", n: number) => {
    await client.assignJob({ jobId, agent: agent(n) });
    if (upTo === "assigned") return;
    await client.acceptJob({ jobId, agentId: `agent-${n}` });
    if (upTo === "running") await client.transitionJob({ jobId, event: JobEventType.START });
  };

  it("counts an organization's unfinished command jobs per queue as scheduled, running and waiting", async () => {
    const orgId = randomUUID();
    const yaml = `steps:
  - {label: queued, command: a, agents: {queue: linux}}
  - {label: assigned, command: a, agents: {queue: linux}}
  - {label: accepted, command: a, agents: {queue: linux}}
  - {label: running, command: a}
  - {label: passed, command: a}
  - wait
  - {label: behind-linux, command: a, agents: {queue: linux}}
  - {label: behind-default, command: a}
  - block: Release?
`;
    const p = pipelineOf(yaml, { organizationId: orgId });
    const build = await newBuild(client, p);
    await run(jobByName(build, "assigned"), "assigned", 1);
    await run(jobByName(build, "accepted"), "accepted", 2);
    await run(jobByName(build, "running"), "running", 3);
    await run(jobByName(build, "passed"), "running", 4);
    await client.transitionJob({ jobId: jobByName(build, "passed"), event: JobEventType.FINISH, exitStatus: 0 });

    // A second pipeline of the organization: a job timing out and a job being canceled count as running.
    const second = pipelineOf(
      "steps:\n  - {label: slow, command: a, agents: {queue: linux}}\n  - {label: stopping, command: a, agents: {queue: macos}}",
      { organizationId: orgId },
    );
    const other = await newBuild(client, second);
    await run(jobByName(other, "slow"), "running", 5);
    await client.transitionJob({ jobId: jobByName(other, "slow"), event: JobEventType.TIMEOUT });
    await run(jobByName(other, "stopping"), "accepted", 6);
    await client.cancelBuild({ pipelineId: second.id, number: other.number });
    const stopped = (await client.getBuild({ pipelineId: second.id, number: other.number })).build;
    expect(stopped?.jobs.map((j) => j.state)).toEqual(["timing_out", "canceling"]);
    // A canceled build's jobs count no more.
    const gone = await newBuild(client, pipelineOf("steps: [{label: x, command: a}]", { organizationId: orgId }));
    await client.cancelBuild({ pipelineId: gone.pipelineId, number: gone.number });

    // Another organization's jobs, on the same queue names, never count.
    const stranger = pipelineOf("steps: [{label: x, command: a, agents: {queue: linux}}, {label: y, command: a}]");
    await newBuild(client, stranger);

    const { queues } = await client.countQueueJobs({ organizationId: orgId });
    const byQueue = Object.fromEntries(queues.map((q) => [q.queue, [q.scheduled, q.running, q.waiting]]));
    expect(byQueue).toEqual({
      linux: [2, 2, 1],
      default: [0, 1, 1],
      macos: [0, 1, 0],
    });
    expect(queues).toHaveLength(3);

    const strangers = await client.countQueueJobs({ organizationId: stranger.organizationId });
    expect(Object.fromEntries(strangers.queues.map((q) => [q.queue, [q.scheduled, q.running, q.waiting]]))).toEqual({
      linux: [1, 0, 0],
      default: [1, 0, 0],
    });
    expect((await client.countQueueJobs({ organizationId: "" })).queues).toEqual([]);
    expect((await client.countQueueJobs({ organizationId: randomUUID() })).queues).toEqual([]);
  });
});
