import { Code, ConnectError } from "@connectrpc/connect";
import { newId } from "@conveyor/runtime";
import { createQueueDirectory } from "../queues/queue-directory.js";
import { createMemoryMaintainerRepository } from "../store/maintainer-repository.js";
import { createMemoryClusterRepository } from "../store/memory-cluster-repository.js";
import { createMemoryQueueRepository } from "../store/memory-queue-repository.js";
import { createEventRecorder } from "../test-support.js";
import { type ClusterAdminRpcsDeps, createClusterAdminRpcs } from "./cluster-admin-rpc.js";

// Deleting a cluster that pipelines still name is refused (docs/compatibility.md#clusters-and-queues).
async function setup(pipelinesOf?: ClusterAdminRpcsDeps["pipelinesOf"]) {
  const clusters = createMemoryClusterRepository();
  const queues = createMemoryQueueRepository();
  const organizationId = newId();
  const clusterId = newId();
  await clusters.insertCluster({ _id: clusterId, organizationId, name: "C", description: "", createdAt: new Date() });
  const asked: Array<[string, string, number]> = [];
  const rpcs = createClusterAdminRpcs({
    clusters,
    queues,
    maintainers: createMemoryMaintainerRepository(),
    agents: { countAgents: async () => [] },
    directory: createQueueDirectory({ queues }),
    events: createEventRecorder(),
    now: () => new Date(),
    ...(pipelinesOf
      ? {
          pipelinesOf: (org: string, cluster: string, limit: number) => {
            asked.push([org, cluster, limit]);
            return pipelinesOf(org, cluster, limit);
          },
        }
      : {}),
  });
  // The handlers take a context they do not read.
  const remove = () => rpcs.deleteCluster({ organizationId, id: clusterId } as never, {} as never);
  return { clusters, organizationId, clusterId, asked, remove };
}

const refusal = async (p: unknown) => {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("not refused");
};

describe("deleteCluster and the pipelines of the cluster", () => {
  it("refuses while pipelines name the cluster, naming a few and counting them", async () => {
    const s = await setup(async () => ({ slugs: ["api", "app", "web"], total: 5 }));
    const err = await refusal(s.remove());
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe(
      "The cluster has 5 pipelines (api, app, web and 2 more): move them to another cluster first",
    );
    expect(s.asked).toEqual([[s.organizationId, s.clusterId, 3]]);
    expect(await s.clusters.findCluster(s.organizationId, s.clusterId)).not.toBeNull();
  });

  it("deletes a cluster no pipeline names", async () => {
    const s = await setup(async () => ({ slugs: [], total: 0 }));
    await s.remove();
    expect(await s.clusters.findCluster(s.organizationId, s.clusterId)).toBeNull();
  });

  it("keeps the cluster when the pipelines service cannot say", async () => {
    const s = await setup(async () => {
      throw new ConnectError("down", Code.Unavailable);
    });
    expect((await refusal(s.remove())).code).toBe(Code.Unavailable);
    expect(await s.clusters.findCluster(s.organizationId, s.clusterId)).not.toBeNull();
  });
});
