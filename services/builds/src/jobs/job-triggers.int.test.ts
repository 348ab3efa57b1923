import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { type Build, type Job, JobEventType } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { BuildRepository } from "../store/build-repository.js";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";
import { childBuildId, type TriggerLookups } from "./job-triggers.js";

// Trigger steps through the builds service over the real MongoDB-wire server, with fake lookups standing in for
// the pipelines service and identity's teams and rules: the child build and what it is made of, sync and async
// triggers, refusals written into the trigger job's log, and the sweep finishing what a crash left undone.
const databases = testDatabases("it_triggers");

beforeAll(() => databases.connect());
afterAll(() => databases.close());

const ORG = randomUUID();
const ann = { id: randomUUID(), name: "Ann", email: "ann@example.com" };

const pipelineOf = (slug: string, yaml: string, extra: Omit<Partial<Pipeline>, "$typeName" | "$unknown"> = {}) =>
  pipelineFromYaml(yaml, {
    organizationId: ORG,
    slug,
    name: slug,
    defaultBranch: "trunk",
    clusterId: "cluster-1",
    ...extra,
  });

const CHILD_STEPS = "steps:\n  - label: child-job\n    command: make\n";

/** Fake lookups over some pipelines; who may build which, and which rules exist, are the test's to set. */
function fakeLookups(pipelines: Pipeline[]) {
  const calls = { mayBuild: [] as string[][], ruleAllows: [] as string[][] };
  const refusedTo = new Set<string>();
  const rules = new Set<string>();
  const lookups: TriggerLookups = {
    // As the pipelines service: by slug or by id.
    async pipeline(organizationId, slugOrId) {
      return (
        pipelines.find((p) => p.organizationId === organizationId && (p.slug === slugOrId || p.id === slugOrId)) ?? null
      );
    },
    async mayBuild(organizationId, userId, pipelineId) {
      calls.mayBuild.push([organizationId, userId, pipelineId]);
      return !refusedTo.has(pipelineId);
    },
    async ruleAllows(organizationId, sourceId, targetId) {
      calls.ruleAllows.push([organizationId, sourceId, targetId]);
      return rules.has(`${sourceId}->${targetId}`);
    },
  };
  return { lookups, calls, refusedTo, rules };
}

/** A builds service over a new database with trigger lookups; `now` is its clock, `repo` may replace its methods. */
function openService(
  lookups: TriggerLookups,
  opts: { now?: () => Date; repo?: (repo: BuildRepository) => BuildRepository } = {},
) {
  return openBuildsService(databases.create(), {
    triggers: lookups,
    ...(opts.now ? { now: opts.now } : {}),
    wrap: { repo: opts.repo },
  });
}

/** Polls `probe` until it returns something, or fails after `timeoutMs` saying `what`. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Waits for a build to reach `state` (the build follows its jobs right after their transition). */
async function buildState(client: Client, pipelineId: string, number: number, state: string) {
  return eventually(`build ${number} to be ${state}`, async () => {
    const { build } = await client.getBuild({ pipelineId, number });
    return build?.state === state ? build : undefined;
  });
}

async function run(client: Client, jobId: string, exitStatus: number) {
  await client.transitionJob({ jobId, event: JobEventType.ASSIGN, agent: { id: "agent-1", name: "box" } });
  await client.transitionJob({ jobId, event: JobEventType.ACCEPT, agentId: "agent-1" });
  await client.transitionJob({ jobId, event: JobEventType.START });
  return client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus });
}

async function logOf(client: Client, build: Build, jobId: string): Promise<string> {
  let text = "";
  for await (const part of client.streamJobLog({ pipelineId: build.pipelineId, number: build.number, jobId })) {
    if (part.part.case === "data") text += Buffer.from(part.part.value).toString("utf8");
  }
  return text;
}

/** A trigger step to `target`. */
const triggerTo = (target: string, extra = "") => `
steps:
  - trigger: ${target}
    label: Run ${target}
${extra}`;

describe("trigger steps", () => {
  /** A parent pipeline triggering `target`, the lookups knowing the parent and `others`. */
  async function arrange(target: string, others: Pipeline[], extra = "", now?: () => Date) {
    const parent = pipelineOf("parent", triggerTo(target, extra));
    const fake = fakeLookups([parent, ...others]);
    const served = await openService(fake.lookups, now ? { now } : {});
    const { build } = await served.client.createBuild({
      pipeline: parent,
      commit: "abc",
      branch: "main",
      message: "parent message",
      organizationSlug: "acme",
      creator: ann,
    });
    if (!build) throw new Error("no build");
    const triggerJob = build.jobs[0] as Job;
    const getParent = async () =>
      (await served.client.getBuild({ pipelineId: parent.id, number: build.number })).build as Build;
    const job = async () => (await served.client.getJob({ jobId: triggerJob.id })).job as Job;
    return { ...served, ...fake, parent, build, triggerJob, getParent, job };
  }

  const recorded = (job: () => Promise<Job>) =>
    eventually("the trigger job to record its build", async () => {
      const j = await job();
      return j.triggeredBuild?.id ? j : undefined;
    });
  const finished = (job: () => Promise<Job>) =>
    eventually("the trigger job to finish", async () => {
      const j = await job();
      return j.finishedAt ? j : undefined;
    });

  it("creates the child build from the step, with a derived id and triggered_from, and follows its result", async () => {
    const child = pipelineOf("child", CHILD_STEPS);
    const t = await arrange(
      "child",
      [child],
      "    build:\n      message: Deploy it\n      env: {STAGE: prod}\n      meta_data: {release: v1}\n",
    );
    const job = await recorded(t.job);
    expect(job.state).toBe("running");
    expect(job.triggeredBuild).toMatchObject({ id: childBuildId(t.triggerJob.id), number: 1, pipelineSlug: "child" });
    const { build: created } = await t.client.getBuild({ pipelineId: child.id, number: 1 });
    expect(created).toMatchObject({
      id: childBuildId(t.triggerJob.id),
      source: "trigger_job",
      commit: "HEAD",
      branch: "trunk",
      message: "Deploy it",
      env: { STAGE: "prod" },
      metaData: { release: "v1" },
      creator: { id: ann.id },
      triggeredFrom: {
        buildId: t.build.id,
        buildNumber: t.build.number,
        pipelineId: t.parent.id,
        pipelineSlug: "parent",
        jobId: t.triggerJob.id,
      },
    });
    expect(t.calls.mayBuild).toEqual([[ORG, ann.id, child.id]]);
    expect(t.calls.ruleAllows).toEqual([]);
    expect((await t.getParent()).state).toBe("running");

    await run(t.client, created?.jobs[0]?.id ?? "", 0);
    const done = await finished(t.job);
    expect(done).toMatchObject({ state: "passed", exitStatus: 0 });
    await buildState(t.client, t.parent.id, t.build.number, "passed");
  });

  it("fails a synchronous trigger whose child build fails", async () => {
    const child = pipelineOf("child", CHILD_STEPS);
    const t = await arrange("child", [child]);
    const job = await recorded(t.job);
    const { build: created } = await t.client.getBuild({ pipelineId: child.id, number: 1 });
    expect(created?.message).toBe("Run child");
    await run(t.client, created?.jobs[0]?.id ?? "", 2);
    expect(await finished(t.job)).toMatchObject({ id: job.id, state: "failed", exitStatus: 1 });
    await buildState(t.client, t.parent.id, t.build.number, "failed");
  });

  it("passes an async trigger as soon as its child build exists", async () => {
    const child = pipelineOf("child", CHILD_STEPS);
    const t = await arrange("child", [child], "    async: true\n");
    const done = await finished(t.job);
    expect(done).toMatchObject({ state: "passed", exitStatus: 0, triggeredBuild: { number: 1 } });
    await buildState(t.client, t.parent.id, t.build.number, "passed");
    const { build: created } = await t.client.getBuild({ pipelineId: child.id, number: 1 });
    expect(created?.state).toBe("scheduled");
  });

  it.each([
    [
      "the creator may not build the target",
      "locked",
      (t: { refusedTo: Set<string> }, p: Pipeline) => t.refusedTo.add(p.id),
      'No pipeline "locked" exists in this organization that Ann may create builds of, so this trigger cannot create its build',
    ],
    [
      "the target is in another cluster and no rule allows it",
      "far",
      () => undefined,
      '"far" is in another cluster: a pipeline.trigger_build.pipeline rule from "parent" to "far" must allow this trigger',
    ],
    ["the target is archived", "old", () => undefined, 'The build on "old" could not be created: Pipeline is archived'],
    [
      // The same words as when the creator may not build it: the log is no oracle of what exists.
      "the target does not exist",
      "nowhere",
      () => undefined,
      'No pipeline "nowhere" exists in this organization that Ann may create builds of, so this trigger cannot create its build',
    ],
  ])(
    "fails the trigger with the reason in its log when %s, creating nothing",
    async (_label, slug, arrangeIt, reason) => {
      const target = pipelineOf(slug === "nowhere" ? "elsewhere" : slug, CHILD_STEPS, {
        ...(slug === "far" ? { clusterId: "cluster-2" } : {}),
        ...(slug === "old" ? { archivedAt: { seconds: 1n, nanos: 0 } as Pipeline["archivedAt"] } : {}),
      });
      const parent = pipelineOf("parent", triggerTo(slug));
      const fake = fakeLookups([parent, target]);
      arrangeIt(fake, target);
      const { client } = await openService(fake.lookups);
      const { build } = await client.createBuild({
        pipeline: parent,
        commit: "abc",
        branch: "main",
        organizationSlug: "acme",
        creator: ann,
      });
      const jobId = build?.jobs[0]?.id ?? "";
      const done = await eventually("the trigger to fail", async () => {
        const j = (await client.getJob({ jobId })).job;
        return j?.finishedAt ? j : undefined;
      });
      expect(done).toMatchObject({ state: "failed", exitStatus: 1 });
      expect(done.triggeredBuild).toBeUndefined();
      expect(await logOf(client, build as Build, jobId)).toContain(reason);
      await buildState(client, parent.id, build?.number ?? 0, "failed");
      expect((await client.listBuilds({ organizationIds: [ORG], pipelineId: target.id })).builds).toEqual([]);
    },
  );

  it("triggers across clusters once a pipeline.trigger_build.pipeline rule allows it", async () => {
    const far = pipelineOf("far", CHILD_STEPS, { clusterId: "cluster-2" });
    const parent = pipelineOf("parent", triggerTo("far"));
    const fake = fakeLookups([parent, far]);
    fake.rules.add(`${parent.id}->${far.id}`);
    const { client } = await openService(fake.lookups);
    const { build } = await client.createBuild({ pipeline: parent, commit: "abc", branch: "main", creator: ann });
    const jobId = build?.jobs[0]?.id ?? "";
    const job = await eventually("the child build", async () => {
      const j = (await client.getJob({ jobId })).job;
      return j?.triggeredBuild?.id ? j : undefined;
    });
    expect(job.state).toBe("running");
    expect(fake.calls.ruleAllows).toEqual([[ORG, parent.id, far.id]]);
    expect((await client.getBuild({ pipelineId: far.id, number: 1 })).build?.triggeredFrom?.jobId).toBe(jobId);
  });

  it("never creates a second child build: not on later sweeps, nor when a crash lost the record of the first", async () => {
    let clock = Date.parse("2032-03-01T10:00:00Z");
    let lose = true;
    const child = pipelineOf("child", CHILD_STEPS);
    const parent = pipelineOf("parent", triggerTo("child"));
    const fake = fakeLookups([parent, child]);
    const { client, parts } = await openService(fake.lookups, {
      now: () => new Date(clock),
      // The process dies right after creating the child build, before the trigger job records it.
      repo: (repo) => ({
        ...repo,
        async updateJob(id, from, update, guard) {
          if (update.triggeredBuild && lose) {
            lose = false;
            throw new Error("the process died before recording the child build");
          }
          return repo.updateJob(id, from, update, guard);
        },
      }),
    });
    const { build } = await client.createBuild({ pipeline: parent, commit: "abc", branch: "main", creator: ann });
    const jobId = build?.jobs[0]?.id ?? "";
    const children = async () =>
      (await client.listBuilds({ organizationIds: [ORG], pipelineId: child.id })).builds.map((b) => b.id);
    await eventually("the child build", async () => ((await children()).length > 0 ? true : undefined));
    expect(await children()).toEqual([childBuildId(jobId)]);
    const unrecorded = (await client.getJob({ jobId })).job;
    expect(unrecorded).toMatchObject({ state: "running" });
    expect(unrecorded?.triggeredBuild).toBeUndefined();

    // Within a minute of its start the sweep leaves it alone; after that it finds the child build it made.
    await parts.duties.sweepJobs();
    expect((await client.getJob({ jobId })).job?.triggeredBuild).toBeUndefined();
    clock += 61_000;
    await parts.duties.sweepJobs();
    expect((await client.getJob({ jobId })).job?.triggeredBuild?.id).toBe(childBuildId(jobId));
    await parts.duties.sweepJobs();
    await parts.duties.sweepJobs();
    expect(await children()).toEqual([childBuildId(jobId)]);
    expect(fake.calls.mayBuild).toHaveLength(1);

    const { build: created } = await client.getBuild({ pipelineId: child.id, number: 1 });
    await run(client, created?.jobs[0]?.id ?? "", 0);
    const done = await eventually("the trigger to pass", async () => {
      const j = (await client.getJob({ jobId })).job;
      return j?.finishedAt ? j : undefined;
    });
    expect(done.state).toBe("passed");
  });

  it("ends a synchronous trigger on a sweep when the follow-up of its finished child build was lost", async () => {
    const child = pipelineOf("child", CHILD_STEPS);
    const parent = pipelineOf("parent", triggerTo("child"));
    const fake = fakeLookups([parent, child]);
    let triggerJobId = "";
    let lose = true;
    const { client, parts } = await openService(fake.lookups, {
      // The process dies as it ends the trigger job after the child build finished.
      repo: (repo) => ({
        ...repo,
        async updateJobs(changes, mark) {
          if (changes.some((c) => c.id === triggerJobId && c.update.state === "passed") && lose) {
            lose = false;
            throw new Error("the process died before ending the trigger job");
          }
          return repo.updateJobs(changes, mark);
        },
      }),
    });
    const { build } = await client.createBuild({ pipeline: parent, commit: "abc", branch: "main" });
    triggerJobId = build?.jobs[0]?.id ?? "";
    await eventually("the child build", async () =>
      (await client.getJob({ jobId: triggerJobId })).job?.triggeredBuild?.id ? true : undefined,
    );
    // No creator on the parent (a webhook build): nobody's access to check.
    expect(fake.calls.mayBuild).toEqual([]);
    const { build: created } = await client.getBuild({ pipelineId: child.id, number: 1 });
    const childDone = await run(client, created?.jobs[0]?.id ?? "", 0);
    expect(childDone.build?.state).toBe("passed");
    await eventually("the follow-up to be lost", async () => (lose ? undefined : true));
    expect((await client.getJob({ jobId: triggerJobId })).job?.state).toBe("running");
    await parts.duties.sweepJobs();
    const done = (await client.getJob({ jobId: triggerJobId })).job;
    expect(done).toMatchObject({ state: "passed", exitStatus: 0 });
    await buildState(client, parent.id, build?.number ?? 0, "passed");
  });
});
