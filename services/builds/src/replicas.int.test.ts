import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import { type BuildRepository, createMongoBuildRepository } from "./store/build-repository.js";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "./test-builds-service.js";
import { pipelineFromYaml } from "./test-pipelines.js";

// The builds service with several replicas (CONVEYOR_REPLICAS, Kubernetes): two services over one database, each
// with its own per-process locks, as two processes are; and the state a process leaves when it dies between the
// compare-and-set of a job and the reconcile of its build (SIGKILL in the middle of a call).
const databases = testDatabases("it_replicas");

let replicas: [Client, Client];
/** The replica a call goes to, alternating. */
const replica = (i: number): Client => (i % 2 === 0 ? replicas[0] : replicas[1]);
let repo: BuildRepository;

beforeAll(async () => {
  await databases.connect();
  const db = databases.create();
  replicas = [(await openBuildsService(db)).client, (await openBuildsService(db)).client];
  repo = await createMongoBuildRepository(db);
});
afterAll(() => databases.close());

const pipelineOf = pipelineFromYaml;

async function newBuild(yaml: string) {
  const { build } = await replicas[0].createBuild({
    pipeline: pipelineOf(yaml),
    commit: "abc",
    branch: "main",
    organizationSlug: "acme",
  });
  if (!build) throw new Error("no build");
  return build;
}

/** Takes a scheduled job to running on agent `agentId`, through either replica. */
async function run(client: Client, jobId: string, agentId: string) {
  await client.assignJob({ jobId, agent: { id: agentId, name: agentId, hostname: "h", metaData: [] } });
  await client.acceptJob({ jobId, agentId });
  await client.transitionJob({ jobId, event: JobEventType.START, agentId });
}

async function codeOf(call: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe("the builds service with two replicas on one database", () => {
  it("numbers builds created on both replicas at once 1 to n, each once", async () => {
    const pipeline = pipelineOf("steps:\n  - {label: one, command: run}");
    const created = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        replica(i).createBuild({ pipeline, commit: "abc", branch: "main", organizationSlug: "acme" }),
      ),
    );
    const numbers = created.map((c) => c.build?.number ?? 0).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
  });

  it("keeps a build right when its jobs finish on both replicas at once", async () => {
    const build = await newBuild(
      "steps:\n  - {label: shard, command: run, parallelism: 8}\n  - wait\n  - {label: after, command: run}",
    );
    const shards = build.jobs.filter((j) => j.label.startsWith("shard"));
    expect(shards).toHaveLength(8);
    await Promise.all(shards.map((j, i) => run(replica(i), j.id, `agent-${i}`)));
    await Promise.all(
      shards.map((j, i) =>
        replica(i + 1).transitionJob({
          jobId: j.id,
          event: JobEventType.FINISH,
          exitStatus: 0,
          agentId: `agent-${i}`,
        }),
      ),
    );
    const { build: after } = await replicas[1].getBuild({ pipelineId: build.pipelineId, number: build.number });
    const last = after?.jobs.find((j) => j.label === "after");
    expect(last?.state).toBe("scheduled");
    expect(after?.state).toBe("running");
    await run(replicas[0], last?.id ?? "", "agent-last");
    const { build: done } = await replicas[1].transitionJob({
      jobId: last?.id ?? "",
      event: JobEventType.FINISH,
      exitStatus: 0,
      agentId: "agent-last",
    });
    expect(done?.state).toBe("passed");
  });

  it("brings a build in line when the agent repeats a finish whose process died before reconciling the build", async () => {
    const build = await newBuild(
      "steps:\n  - {label: first, command: run}\n  - wait\n  - {label: second, command: run}",
    );
    const [first, , second] = build.jobs;
    await run(replicas[0], first?.id ?? "", "agent-1");
    // What a replica killed right after the job's compare-and-set leaves: the job passed, its build not advanced.
    const stored = await repo.updateJob(first?.id ?? "", "running", {
      state: "passed",
      exitStatus: 0,
      finishedAt: new Date(),
    });
    expect(stored?.state).toBe("passed");
    expect((await replicas[1].getJob({ jobId: second?.id ?? "" })).job?.state).toBe("waiting");

    // The agent's call failed with the process, so it sends the finish again, to the other replica: refused (the
    // job is finished), but the build moves on.
    const again = replicas[1].transitionJob({
      jobId: first?.id ?? "",
      event: JobEventType.FINISH,
      exitStatus: 0,
      agentId: "agent-1",
    });
    expect(await codeOf(again)).toBe(Code.FailedPrecondition);
    expect((await replicas[1].getJob({ jobId: second?.id ?? "" })).job?.state).toBe("scheduled");
    const { build: after } = await replicas[0].getBuild({ pipelineId: build.pipelineId, number: build.number });
    expect(after?.state).toBe("running");
    expect(after?.startedAt).toBeDefined();
  });
});
