import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { type EventPublisher, stepMessages } from "@conveyor/runtime";
import { type BuildsClient, openBuildsService, testDatabases } from "../test-builds-service.js";

// A large build's cancel over the real MongoDB-wire server, with a small batch: answered `canceling` after the first
// batch, the rest written in the background batch by batch, no job of it handed to an agent meanwhile, and a cancel
// cut short by a crash finished by the sweep.
const BATCH = 40;
const JOBS = 150;
const databases = testDatabases("it_cancel");
const published: string[] = [];
const events: EventPublisher = {
  async publish(subject) {
    published.push(subject);
  },
};

beforeAll(() => databases.connect());
afterAll(() => databases.close());

/** A builds service over a new database, cancelling BATCH jobs at a time. */
const openService = () => openBuildsService(databases.create(), { events, cancelBatch: BATCH });

/** A build of JOBS parallel jobs, the first of them running on an agent. */
async function largeBuild(client: BuildsClient) {
  const pipeline = create(PipelineSchema, {
    id: randomUUID(),
    organizationId: randomUUID(),
    slug: "big",
    name: "Big",
    defaultBranch: "main",
    steps: stepMessages([{ type: "script", name: "many", command: "true", agent_query_rules: [], parallelism: JOBS }]),
  });
  const { build } = await client.createBuild({ pipeline, commit: "abc", branch: "main" });
  const jobs = build?.jobs ?? [];
  expect(jobs).toHaveLength(JOBS);
  const running = jobs[0]?.id ?? "";
  for (const event of [JobEventType.ASSIGN, JobEventType.ACCEPT, JobEventType.START]) {
    await client.transitionJob({ jobId: running, event });
  }
  return { pipeline, number: build?.number ?? 0, running, jobs };
}

const counts = (states: string[]) =>
  states.reduce<Record<string, number>>((all, s) => Object.assign(all, { [s]: (all[s] ?? 0) + 1 }), {});

describe("a large build's cancel", () => {
  it("answers canceling after one batch, goes to no agent meanwhile, and ends canceled once its agent stops", async () => {
    const { client, parts } = await openService();
    const { pipeline, number, running, jobs } = await largeBuild(client);

    const answer = await client.cancelBuild({ pipelineId: pipeline.id, number, reason: "too big" });
    expect(answer.build?.state).toBe("canceling");
    const first = counts(answer.build?.jobs.map((j) => j.state) ?? []);
    // The running job first (its agent is told soonest), then queued ones, BATCH in all.
    expect(answer.build?.jobs.find((j) => j.id === running)?.state).toBe("canceling");
    expect((first.canceled ?? 0) + (first.canceling ?? 0)).toBe(BATCH);

    // A job the cancel has not reached (or has) goes to no agent.
    const last = jobs[JOBS - 1]?.id ?? "";
    const refused = await client.transitionJob({ jobId: last, event: JobEventType.ASSIGN }).catch((e) => e);
    expect(ConnectError.from(refused).code).toBe(Code.FailedPrecondition);

    await parts.cancels.idle();
    const read = await client.getBuild({ pipelineId: pipeline.id, number });
    expect(read.build?.state).toBe("canceling");
    expect(counts(read.build?.jobs.map((j) => j.state) ?? [])).toEqual({ canceling: 1, canceled: JOBS - 1 });

    const finished = await client.transitionJob({ jobId: running, event: JobEventType.FINISH, exitStatus: -1 });
    expect(finished.build?.state).toBe("canceled");
    expect(finished.build?.finishedAt).toBeDefined();
    // Every job's change was announced once: the first cancel's batch and every later one.
    const jobEvents = published.filter((s) => s === "ci.builds.job_state_changed").length;
    expect(jobEvents).toBeGreaterThanOrEqual(JOBS + 4);
  });

  it("finishes by the sweep a cancel a crash cut short after its request", async () => {
    const { client, db, parts } = await openService();
    const { pipeline, number, running } = await largeBuild(client);
    // The request stood; no job write followed (the process died).
    await db
      .collection<{ _id: string }>("builds")
      .updateOne({ pipelineId: pipeline.id, number }, { $set: { cancelRequested: true, cancelReason: "cut" } });

    await parts.duties.sweepJobs();
    await parts.cancels.idle();
    const read = await client.getBuild({ pipelineId: pipeline.id, number });
    expect(read.build?.state).toBe("canceling");
    expect(counts(read.build?.jobs.map((j) => j.state) ?? [])).toEqual({ canceling: 1, canceled: JOBS - 1 });
    expect(read.build?.jobs.find((j) => j.id === running)?.state).toBe("canceling");
  });
});
