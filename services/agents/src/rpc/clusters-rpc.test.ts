import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { AgentsService } from "@conveyor/proto/agents";
import { newId } from "@conveyor/runtime";
import { createMemoryClusterRepository } from "../store/memory-cluster-repository.js";
import { type ClustersRpcDeps, createClusterRpcs } from "./clusters-rpc.js";

// UpdateCluster over an in-memory repository (REST's PATCH …/clusters/{cluster}).

function setup() {
  const deps = {
    clusters: createMemoryClusterRepository(),
    events: { publish: async () => {} },
    now: () => new Date("2026-03-01T10:00:00Z"),
  } as unknown as ClustersRpcDeps;
  const rpcs = createClusterRpcs(deps);
  return createClient(
    AgentsService,
    createRouterTransport(({ service }) => service(AgentsService, rpcs)),
  );
}

async function codeOf(call: Promise<unknown>): Promise<Code | undefined> {
  try {
    await call;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe("UpdateCluster", () => {
  it("changes the name and description given, keeps the rest, and refuses a taken or blank name", async () => {
    const client = setup();
    const organizationId = newId();
    const { cluster } = await client.createCluster({ organizationId, name: "Linux", description: "x86" });
    await client.createCluster({ organizationId, name: "Mac" });
    const id = cluster?.id ?? "";
    const renamed = await client.updateCluster({ organizationId, id, name: " Linux ARM " });
    expect(renamed.cluster).toMatchObject({ id, name: "Linux ARM", description: "x86" });
    const described = await client.updateCluster({ organizationId, id, description: "arm64" });
    expect(described.cluster).toMatchObject({ name: "Linux ARM", description: "arm64" });
    expect(await codeOf(client.updateCluster({ organizationId, id, name: "Mac" }))).toBe(Code.AlreadyExists);
    expect(await codeOf(client.updateCluster({ organizationId, id, name: " " }))).toBe(Code.InvalidArgument);
    expect(await codeOf(client.updateCluster({ organizationId, id, description: "d".repeat(1001) }))).toBe(
      Code.InvalidArgument,
    );
    expect(await codeOf(client.updateCluster({ organizationId: newId(), id, name: "Other" }))).toBe(Code.NotFound);
    expect(await codeOf(client.updateCluster({ organizationId, id: "nope", name: "Other" }))).toBe(Code.NotFound);
    expect((await client.getCluster({ organizationId, id })).cluster).toMatchObject({ name: "Linux ARM" });
  });
});
