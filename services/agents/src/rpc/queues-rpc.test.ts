// Clusters' queues over the agents service run whole in memory (test-support.ts): their rules, and pause and resume
// really stopping and restarting dispatch to the queue's agents.
import { Code, type ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf, newId, SUBJECTS } from "@conveyor/runtime";
import { failure, setup } from "../test-support.js";

const fieldErrors = (f: { err?: ConnectError }) => (f.err ? fieldErrorsOf(f.err) : []);
const user = { id: newId(), name: "Ada", email: "ada@example.com", avatarUrl: "" };

describe("cluster queues", () => {
  it("creates, lists by key, gets, describes and deletes a cluster's queues", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const linux = (
      await s.client.createClusterQueue({ ...where, key: "linux", description: " Linux ", createdBy: user })
    ).queue;
    await s.client.createClusterQueue({ ...where, key: "default" });
    expect(linux).toMatchObject({
      key: "linux",
      description: "Linux",
      dispatchPaused: false,
      createdBy: { id: user.id },
    });
    expect((await s.client.listClusterQueues(where)).queues.map((q) => q.key)).toEqual(["default", "linux"]);
    const id = linux?.id ?? "";
    expect((await s.client.getClusterQueue({ ...where, id })).queue?.key).toBe("linux");
    expect((await s.client.updateClusterQueue({ ...where, id, description: "Big" })).queue?.description).toBe("Big");
    expect((await s.client.updateClusterQueue({ ...where, id })).queue?.description).toBe("Big");
    await s.client.deleteClusterQueue({ ...where, id });
    expect((await failure(s.client.getClusterQueue({ ...where, id }))).code).toBe(Code.NotFound);
  });

  it("refuses a bad or taken key, a long description, and another cluster's or organization's queue", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const bad = await failure(s.client.createClusterQueue({ ...where, key: "linux x" }));
    expect(fieldErrors(bad)).toEqual([
      { field: "key", code: "may only contain letters, digits, dots, hyphens and underscores" },
    ]);
    const q = (await s.client.createClusterQueue({ ...where, key: "linux" })).queue;
    expect((await failure(s.client.createClusterQueue({ ...where, key: "linux" }))).code).toBe(Code.AlreadyExists);
    const long = await failure(s.client.createClusterQueue({ ...where, key: "x", description: "d".repeat(1001) }));
    expect(fieldErrors(long)[0]?.field).toBe("description");
    const other = await s.place();
    const elsewhere = { organizationId: other.orgId, clusterId: other.clusterId, id: q?.id ?? "" };
    expect((await failure(s.client.getClusterQueue(elsewhere))).code).toBe(Code.NotFound);
    expect((await failure(s.client.getClusterQueue({ ...where, clusterId: newId(), id: q?.id ?? "" }))).code).toBe(
      Code.NotFound,
    );
  });

  it("refuses to delete a queue while an agent of it is connected", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const q = (await s.client.createClusterQueue({ ...where, key: "linux" })).queue;
    const a = await s.agent({ metaData: ["queue=linux"] });
    const refused = await failure(s.client.deleteClusterQueue({ ...where, id: q?.id ?? "" }));
    expect(refused.code).toBe(Code.FailedPrecondition);
    expect(refused.message).toMatch(/1 connected agent/);
    await s.client.disconnectAgent({ agentId: a.id });
    await s.client.deleteClusterQueue({ ...where, id: q?.id ?? "" });
  });

  it("registers agents of a cluster with queues only into one of them; a cluster without queues takes any", async () => {
    const s = await setup();
    expect((await s.register({ metaData: ["queue=anything"] })).id).not.toBe("");
    await s.client.createClusterQueue({ organizationId: s.orgId, clusterId: s.clusterId, key: "linux" });
    const refused = await failure(s.client.registerAgent({ tokenId: s.tokenId, metaData: ["queue=gpu"] }));
    expect(fieldErrors(refused)).toEqual([
      { field: "meta_data", code: 'names queue "gpu", which is not a queue of this cluster (its queues: linux)' },
    ]);
    expect((await failure(s.client.registerAgent({ tokenId: s.tokenId }))).code).toBe(Code.InvalidArgument);
    expect((await s.register({ metaData: ["queue=linux"] })).id).not.toBe("");
    // An unclustered token's agents are not concerned.
    const bare = await s.place(false);
    expect((await s.register({ metaData: ["queue=gpu"] }, bare.tokenId)).id).not.toBe("");
  });

  it("pausing a queue's dispatch keeps its jobs scheduled and offers them to none of its agents; resuming offers them at once", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const q = (await s.client.createClusterQueue({ ...where, key: "deploy" })).queue;
    await s.client.createClusterQueue({ ...where, key: "default" });
    const id = q?.id ?? "";
    const paused = (await s.client.pauseClusterQueue({ ...where, id, note: "freeze", pausedBy: user })).queue;
    expect(paused).toMatchObject({
      dispatchPaused: true,
      dispatchPausedNote: "freeze",
      dispatchPausedBy: { id: user.id },
    });
    expect(paused?.dispatchPausedAt).toBeDefined();
    expect((await failure(s.client.pauseClusterQueue({ ...where, id }))).code).toBe(Code.FailedPrecondition);

    const a = await s.agent({ metaData: ["queue=deploy"] });
    const other = await s.agent({});
    const jobId = await s.job({ rules: ["queue=deploy"] });
    const defaultJob = await s.job({});
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe("");
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe("");
    // Another queue's agents go on taking their own jobs.
    expect((await s.client.pingAgent({ agentId: other.id })).jobId).toBe(defaultJob);

    const told = s.events.agentsOn(SUBJECTS.agents.agentChanged).length;
    const resumed = (await s.client.resumeClusterQueue({ ...where, id })).queue;
    // Its idle agents are told, so that a streaming one (which does not ping) asks for the job at once.
    expect(s.events.agentsOn(SUBJECTS.agents.agentChanged).slice(told)).toEqual([a.id]);
    expect(resumed).toMatchObject({ dispatchPaused: false, dispatchPausedNote: "" });
    expect(resumed?.dispatchPausedAt).toBeUndefined();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);
    expect((await failure(s.client.resumeClusterQueue({ ...where, id }))).code).toBe(Code.FailedPrecondition);
    // Each job records the queue object it was dispatched through (REST's cluster_queue_id).
    expect((await s.builds.job(jobId)).clusterQueueId).toBe(id);
    expect((await s.builds.job(defaultJob)).clusterQueueId).not.toBe(id);
  });

  it("records no queue on a job dispatched in a cluster without that queue object", async () => {
    const s = await setup();
    const a = await s.agent({});
    const jobId = await s.job({});
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);
    expect((await s.builds.job(jobId)).clusterQueueId).toBeNull();
  });

  it("a pause made on one process stops dispatch on another within the queue cache's lifetime", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const q = (await s.client.createClusterQueue({ ...where, key: "default" })).queue;
    const second = s.replica();
    const a = await s.agent({});
    await s.job({});
    await s.job({});
    await second.client.pauseClusterQueue({ ...where, id: q?.id ?? "" });
    s.clock.advance(2_000);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe("");
  });
});

describe("cluster deletion, token descriptions and maintainers", () => {
  it("deletes a cluster only once it has no queues and no connected agents, revoking its tokens", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const q = (await s.client.createClusterQueue({ ...where, key: "default" })).queue;
    const a = await s.agent({});
    expect((await failure(s.client.deleteCluster({ organizationId: s.orgId, id: s.clusterId }))).message).toMatch(
      /1 queue: delete them first/,
    );
    await s.client.disconnectAgent({ agentId: a.id });
    await s.client.deleteClusterQueue({ ...where, id: q?.id ?? "" });
    await s.agent({});
    expect((await failure(s.client.deleteCluster({ organizationId: s.orgId, id: s.clusterId }))).message).toMatch(
      /1 connected agent/,
    );
    const s2 = await setup();
    await s2.client.deleteCluster({ organizationId: s2.orgId, id: s2.clusterId });
    expect((await failure(s2.client.getCluster({ organizationId: s2.orgId, id: s2.clusterId }))).code).toBe(
      Code.NotFound,
    );
    expect((await failure(s2.client.registerAgent({ tokenId: s2.tokenId }))).code).toBe(Code.Unauthenticated);
  });

  it("changes an active token's description, refusing a blank one and a revoked token", async () => {
    const s = await setup();
    const updated = await s.client.updateAgentToken({ organizationId: s.orgId, id: s.tokenId, description: " CI " });
    expect(updated.token?.description).toBe("CI");
    const blank = await failure(
      s.client.updateAgentToken({ organizationId: s.orgId, id: s.tokenId, description: " " }),
    );
    expect(fieldErrors(blank)).toEqual([{ field: "description", code: "can't be blank" }]);
    await s.client.revokeAgentToken({ organizationId: s.orgId, id: s.tokenId });
    const revoked = await failure(
      s.client.updateAgentToken({ organizationId: s.orgId, id: s.tokenId, description: "x" }),
    );
    expect(revoked.code).toBe(Code.NotFound);
  });

  it("adds a user or a team as a maintainer once, lists and removes them", async () => {
    const s = await setup();
    const where = { organizationId: s.orgId, clusterId: s.clusterId };
    const userId = newId();
    const m = (await s.client.addClusterMaintainer({ ...where, userId })).maintainer;
    await s.client.addClusterMaintainer({ ...where, teamId: newId() });
    expect((await failure(s.client.addClusterMaintainer({ ...where, userId }))).code).toBe(Code.AlreadyExists);
    const both = await failure(s.client.addClusterMaintainer({ ...where, userId, teamId: newId() }));
    expect(fieldErrors(both)).toEqual([{ field: "actor", code: "must name exactly one user or one team" }]);
    expect((await s.client.listClusterMaintainers(where)).maintainers).toHaveLength(2);
    await s.client.removeClusterMaintainer({ ...where, id: m?.id ?? "" });
    expect((await s.client.listClusterMaintainers(where)).maintainers).toHaveLength(1);
    expect((await failure(s.client.removeClusterMaintainer({ ...where, id: m?.id ?? "" }))).code).toBe(Code.NotFound);
  });
});
