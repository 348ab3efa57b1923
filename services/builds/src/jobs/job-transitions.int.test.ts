import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { JobAgentSchema, JobEventType } from "@conveyor/proto/builds";
import type { EventPublisher } from "@conveyor/runtime";
import type { BuildRepository } from "../store/build-repository.js";
import { type BuildsClient, openBuildsService, testDatabases } from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";

// A build's concurrent transitions are written together (locked-rounds.ts): checked on the real MongoDB-wire server.
const databases = testDatabases("it_transitions");
let client: BuildsClient;
let repo: BuildRepository;
/** The jobs of each job write the service made: one entry per updateJob, one per updateJobs with its size. */
const writes: number[] = [];
const events: Array<{ subject: string; message: unknown }> = [];

beforeAll(async () => {
  await databases.connect();
  const publisher: EventPublisher = {
    async publish(subject, _schema, message) {
      events.push({ subject, message });
    },
  };
  ({
    client,
    repos: { repo },
  } = await openBuildsService(databases.create(), {
    events: publisher,
    wrap: {
      repo: (inner) => ({
        ...inner,
        updateJob: (...args) => {
          writes.push(1);
          return inner.updateJob(...args);
        },
        updateJobs: (changes, mark) => {
          writes.push(changes.length);
          return inner.updateJobs(changes, mark);
        },
      }),
    },
  }));
});
afterAll(() => databases.close());

const agentOf = (i: number) => create(JobAgentSchema, { id: `agent-${i}`, name: `agent-${i}`, hostname: "box" });

async function parallelBuild(jobs: number) {
  const pipeline = pipelineFromYaml(`steps:\n  - command: "true"\n    parallelism: ${jobs}\n`);
  const { build } = await client.createBuild({ pipeline, commit: "abc", branch: "main" });
  return (build?.jobs ?? []).map((j) => j.id);
}

describe("a build's transitions at once", () => {
  it("writes many agents' assigns and accepts of one build together, each job to its own agent", async () => {
    const ids = await parallelBuild(30);
    expect(ids).toHaveLength(30);
    writes.length = 0;
    const assigned = await Promise.all(ids.map((jobId, i) => client.assignJob({ jobId, agent: agentOf(i) })));
    expect(assigned.map((r) => r.job?.agent?.id)).toEqual(ids.map((_, i) => `agent-${i}`));
    // Not one write each: the assigns arriving while one round held the build's lock went in the next together.
    expect(writes.reduce((a, b) => a + b, 0)).toBe(30);
    expect(writes.length).toBeLessThan(15);

    // One agent accepts a job that is another's: NotFound for it alone, the rest of its round is accepted.
    const accepts = await Promise.allSettled(
      ids.map((jobId, i) => client.acceptJob({ jobId, agentId: i === 7 ? "agent-8" : `agent-${i}` })),
    );
    const refused = accepts[7];
    expect(refused?.status).toBe("rejected");
    expect(ConnectError.from((refused as PromiseRejectedResult).reason).code).toBe(Code.NotFound);
    expect(accepts.filter((r) => r.status === "fulfilled")).toHaveLength(29);
    const stored = await repo.findJobs(ids);
    const byId = new Map(stored.map((j) => [j.id, j]));
    ids.forEach((id, i) => {
      expect(byId.get(id)).toMatchObject({ state: i === 7 ? "assigned" : "accepted", agent: { id: `agent-${i}` } });
    });
    // Each job's change was announced once, with its own marks kept few (as a single write keeps them).
    const accepted = events.filter(
      (e) =>
        e.subject === "ci.builds.job_state_changed" &&
        (e.message as { job?: { state?: string } }).job?.state === "accepted",
    );
    expect(accepted).toHaveLength(29);
    for (const job of stored) expect(job.eventMarks?.length ?? 0).toBeLessThanOrEqual(8);
  });

  it("lets one of two agents assigned the same job at once have it, the other refused", async () => {
    const [jobId = ""] = await parallelBuild(1);
    const results = await Promise.allSettled([
      client.assignJob({ jobId, agent: agentOf(1) }),
      client.assignJob({ jobId, agent: agentOf(2) }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const winner = results.find((r) => r.status === "fulfilled") as PromiseFulfilledResult<{
      job?: { agent?: { id: string } };
    }>;
    expect((await repo.findJob(jobId))?.agent?.id).toBe(winner.value.job?.agent?.id);
    const loser = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(ConnectError.from(loser.reason).code).toBe(Code.FailedPrecondition);
  });

  it("runs the jobs of a build to its end when all its agents call at once, and the build passes", async () => {
    const ids = await parallelBuild(12);
    await Promise.all(ids.map((jobId, i) => client.assignJob({ jobId, agent: agentOf(i) })));
    await Promise.all(ids.map((jobId, i) => client.acceptJob({ jobId, agentId: `agent-${i}` })));
    await Promise.all(
      ids.map((jobId, i) => client.transitionJob({ jobId, event: JobEventType.START, agentId: `agent-${i}` })),
    );
    const finished = await Promise.all(
      ids.map((jobId, i) =>
        client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus: i === 0 ? 1 : 0, agentId: `agent-${i}` }),
      ),
    );
    const last = finished.map((r) => r.build).find((b) => b?.state === "failed");
    expect(last?.state).toBe("failed");
    const stored = await repo.findJobs(ids);
    expect(stored.map((j) => j.state).sort()).toEqual([...Array(11).fill("passed"), "failed"].sort());
  });
});
