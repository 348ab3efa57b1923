import { create } from "@bufbuild/protobuf";
import type { PipelineStep, ScriptStep } from "@conveyor/ci-rules";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { createLogger, stepMessages } from "@conveyor/runtime";
import { createBuildsParts } from "../builds-context.js";
import type { AgentSnapshot } from "../domain/job.js";
import { createMemoryBuildRepository } from "../store/memory-build-repository.js";
import { createMemoryConcurrencySlotRepository } from "../store/memory-concurrency-slot-repository.js";
import { createMemoryJobLogRepository } from "../store/memory-job-log-repository.js";
import { createMemoryPipelineUploadRepository } from "../store/memory-pipeline-upload-repository.js";
import { createMemoryEventBus } from "../testing.js";
import { type ClusterQueueIds, createClusterQueueIds } from "./cluster-queue-ids.js";

// A new job names its cluster queue from creation (docs/compatibility.md#clusters-and-queues): the builds service
// asks its cluster's queues once per build, upload or retry, through a fake of the agents service's list.
const ORG = "00000000-0000-4000-8000-000000000001";
const CLUSTER = "00000000-0000-4000-8000-0000000000c1";
const QUEUES = [
  { id: "q-default", key: "default" },
  { id: "q-deploy", key: "deploy" },
];

function setup(list: (organizationId: string, clusterId: string) => Promise<typeof QUEUES>) {
  const calls: string[] = [];
  const clusterQueues: ClusterQueueIds = createClusterQueueIds({
    list: async (organizationId, clusterId) => {
      calls.push(`${organizationId}/${clusterId}`);
      return list(organizationId, clusterId);
    },
    logger: createLogger("test", "silent"),
  });
  const parts = createBuildsParts({
    repo: createMemoryBuildRepository(),
    logs: createMemoryJobLogRepository(),
    uploads: createMemoryPipelineUploadRepository(),
    slots: createMemoryConcurrencySlotRepository(),
    events: createMemoryEventBus(),
    logger: createLogger("test", "silent"),
    clusterQueues,
  });
  const createBuild = (steps: PipelineStep[], clusterId: string | null = CLUSTER) =>
    parts.creation.create({
      pipeline: create(PipelineSchema, {
        id: crypto.randomUUID(),
        organizationId: ORG,
        slug: "app",
        name: "App",
        defaultBranch: "main",
        steps: stepMessages(steps),
        ...(clusterId ? { clusterId } : {}),
      }),
      organizationSlug: "acme",
      creator: null,
      commit: "HEAD",
      branch: "main",
      message: "m",
      author: null,
      cleanCheckout: false,
      env: {},
      metaData: {},
      pullRequest: null,
      source: "api",
      rebuiltFrom: null,
    });
  return { parts, calls, createBuild };
}

const script = (name: string, extra: Partial<ScriptStep> = {}): ScriptStep => ({
  type: "script",
  name,
  command: `echo ${name}`,
  agent_query_rules: [],
  ...extra,
});

const agent: AgentSnapshot = {
  id: "a-1",
  name: "a",
  hostname: "h",
  ipAddress: "",
  userAgent: "",
  connectionState: "connected",
  createdAt: null,
  metaData: ["queue=deploy"],
};

describe("a new job's cluster queue", () => {
  it("is the queue object its rules name, default without a queue rule, read once for the whole build", async () => {
    const { calls, createBuild } = setup(async () => QUEUES);
    const { jobs } = await createBuild([
      script("plain"),
      script("deploy", { agent_query_rules: ["queue=deploy"] }),
      script("pattern", { agent_query_rules: ["queue=dep*"] }),
      script("elsewhere", { agent_query_rules: ["queue=gpu"] }),
      script("many", { agent_query_rules: ["queue=deploy"], parallelism: 200 }),
    ]);
    const byName = (name: string) => jobs.filter((j) => j.name === name).map((j) => j.clusterQueueId);
    expect(byName("plain")).toEqual(["q-default"]);
    expect(byName("deploy")).toEqual(["q-deploy"]);
    expect(byName("pattern")).toEqual([null]);
    expect(byName("elsewhere")).toEqual([null]);
    expect(new Set(byName("many"))).toEqual(new Set(["q-deploy"]));
    expect(calls).toEqual([`${ORG}/${CLUSTER}`]);
    // Another build soon after reads nothing again.
    await createBuild([script("again")]);
    expect(calls).toHaveLength(1);
  });

  it("is none for an unclustered pipeline's jobs (nothing is asked) and for a cluster without queue objects", async () => {
    const none = setup(async () => []);
    expect((await none.createBuild([script("a")], null)).jobs[0]?.clusterQueueId).toBeNull();
    expect(none.calls).toEqual([]);
    expect((await none.createBuild([script("a")])).jobs[0]?.clusterQueueId).toBeNull();
  });

  it("is left for the agent to name when the agents service does not answer: the build is made all the same", async () => {
    const { parts, createBuild } = setup(async () => {
      throw new Error("connect ECONNREFUSED");
    });
    const { jobs } = await createBuild([script("a", { agent_query_rules: ["queue=deploy"] })]);
    const job = jobs[0];
    expect(job?.state).toBe("scheduled");
    expect(job?.clusterQueueId).toBeNull();
    // The agent that takes it names the queue it ran in, as before.
    const assigned = await parts.transitions.assign(job?.id ?? "", agent, "q-from-agent");
    expect(assigned.job.clusterQueueId).toBe("q-from-agent");
  });

  it("is named for the jobs a pipeline upload adds and for a retry's attempt", async () => {
    const { parts, calls, createBuild } = setup(async () => QUEUES);
    const { jobs } = await createBuild([script("uploader", { agent_query_rules: ["queue=deploy"] })]);
    const uploader = jobs[0];
    if (!uploader) throw new Error("no job");
    for (const type of ["assign", "accept", "start"] as const)
      await parts.transitions.apply(uploader.id, { type }, type === "assign" ? { agent } : {});
    await parts.upload.upload({
      jobId: uploader.id,
      uuid: "u-1",
      replace: false,
      pipeline: "steps:\n  - command: make\n    agents: { queue: deploy }\n  - command: test\n",
    });
    const after = await parts.ctx.repo.jobsOf([uploader.buildId]);
    expect(after.filter((j) => j.id !== uploader.id).map((j) => [j.command, j.clusterQueueId])).toEqual([
      ["make", "q-deploy"],
      ["test", "q-default"],
    ]);
    await parts.transitions.apply(uploader.id, { type: "finish", exitStatus: 1 });
    const build = await parts.ctx.repo.findBuildById(uploader.buildId);
    const retried = await parts.retries.retryByHand(
      uploader.pipelineId,
      build?.number ?? 0,
      uploader.id,
      null,
      parts.reconcile,
    );
    expect(retried.job.clusterQueueId).toBe("q-deploy");
    expect(retried.job.id).not.toBe(uploader.id);
    // The build, its upload and its retry, within the cache's time: one read.
    expect(calls).toHaveLength(1);
  });
});
