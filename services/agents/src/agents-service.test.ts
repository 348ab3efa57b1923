// The agents service run whole in memory over the harness of test-support.ts.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { CredentialKind } from "@conveyor/proto/agents";
import { JobEventType } from "@conveyor/proto/builds";
import { fieldErrorsOf, hashSecret, newId, SUBJECTS } from "@conveyor/runtime";
import { TRUNCATED_REFRESH_SKIPS } from "./dispatch/hints-refresh.js";
import { CONFIG, failure, held, iso, type RegisterInit, seeded, setup, start, T0 } from "./test-support.js";

// ---------------------------------------------------------------------------------------------------------------
// Credentials
// ---------------------------------------------------------------------------------------------------------------

describe("agent credentials", () => {
  it("resolves a registration token (bkat_) to its organization, cluster and token until it is revoked", async () => {
    const s = await setup();
    expect(s.secret).toMatch(/^bkat_[0-9a-f]{40}$/);
    expect(await s.authenticate(s.secret)).toMatchObject({
      kind: CredentialKind.REGISTRATION,
      organizationId: s.orgId,
      clusterId: s.clusterId,
      tokenId: s.tokenId,
      agentId: "",
      jobId: "",
      buildId: "",
    });

    const { token } = await s.client.revokeAgentToken({ organizationId: s.orgId, id: s.tokenId });
    expect(token?.revokedAt).toBeDefined();
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toContainEqual({ tokenId: s.tokenId });
    expect((await failure(s.authenticate(s.secret))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.client.authenticateAgentToken({ secret: s.secret }))).code).toBe(Code.Unauthenticated);
  });

  it("registers no agent with a revoked, unknown or missing token, but agents it registered keep working", async () => {
    const s = await setup();
    const before = await s.agent({ name: "before" });
    await s.client.revokeAgentToken({ organizationId: s.orgId, id: s.tokenId });

    expect((await failure(s.register({ name: "after" }))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.register({ name: "ghost" }, newId()))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.register({ name: "none" }, ""))).code).toBe(Code.Unauthenticated);
    expect(s.agentsRepo.allAgents().map((a) => a.name)).toEqual(["before"]);

    expect((await s.authenticate(before.accessToken)).agentId).toBe(before.id);
    expect((await s.client.pingAgent({ agentId: before.id })).action).toBe("idle");
  });

  it("resolves an agent access token (bkaa_) to its agent until the agent disconnects", async () => {
    const s = await setup();
    const a = await s.agent();
    expect(a.accessToken).toMatch(/^bkaa_[0-9a-f]{40}$/);
    expect(await s.authenticate(a.accessToken)).toMatchObject({
      kind: CredentialKind.AGENT,
      organizationId: s.orgId,
      clusterId: s.clusterId,
      tokenId: s.tokenId,
      agentId: a.id,
      jobId: "",
    });

    await s.client.disconnectAgent({ agentId: a.id });
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toContainEqual({ agentId: a.id });
    expect((await failure(s.authenticate(a.accessToken))).code).toBe(Code.Unauthenticated);
    // Its calls are refused too: it must register again.
    expect((await failure(s.client.pingAgent({ agentId: a.id }))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.client.heartbeatAgent({ agentId: a.id }))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.client.connectAgent({ agentId: a.id }))).code).toBe(Code.Unauthenticated);
  });

  it("still authenticates a lost agent's access token (it may come back)", async () => {
    const s = await setup();
    const a = await s.agent();
    s.clock.advance(CONFIG.lostAfterMs + 1);
    expect(await s.domain.sweepLost()).toBe(1);
    expect((await s.getAgent(a.id))?.connectionState).toBe("lost");
    expect(await s.authenticate(a.accessToken)).toMatchObject({ kind: CredentialKind.AGENT, agentId: a.id });
  });

  it("answers several agents' heartbeats in one call, each as alone: a lost one comes back, a gone one is refused", async () => {
    const s = await setup();
    const live = await s.agent();
    const lost = await s.agent();
    const gone = await s.agent();
    await s.client.disconnectAgent({ agentId: gone.id });
    s.clock.advance(CONFIG.lostAfterMs + 1);
    await s.client.heartbeatAgent({ agentId: live.id });
    expect(await s.domain.sweepLost()).toBe(1);
    expect((await s.getAgent(lost.id))?.connectionState).toBe("lost");
    const { results } = await s.client.heartbeatAgents({ agentIds: [live.id, lost.id, gone.id, ""] });
    expect(results.map((r) => r.result.case)).toEqual(["heartbeat", "heartbeat", "error", "error"]);
    expect(results.map((r) => (r.result.case === "error" ? r.result.value.code : 0))).toEqual([
      0,
      0,
      Code.Unauthenticated,
      Code.Unauthenticated,
    ]);
    expect((await s.getAgent(lost.id))?.connectionState).toBe("connected");
    const tooMany = Array.from({ length: 501 }, () => live.id);
    expect((await failure(s.client.heartbeatAgents({ agentIds: tooMany }))).code).toBe(Code.InvalidArgument);
  });

  it("refuses unknown secrets, secrets without a known prefix and ids of other agents", async () => {
    const s = await setup();
    const a = await s.agent();
    const body = a.accessToken.slice("bkaa_".length);
    for (const secret of [
      "",
      "nope",
      "bkaa_unknown",
      "bkat_unknown",
      "bkaj_unknown",
      `bkat_${body}`, // the right secret under another kind's prefix
      `bkaj_${body}`,
      body,
      `Bkaa_${body}`,
    ]) {
      expect({ secret, code: (await failure(s.authenticate(secret))).code }).toEqual({
        secret,
        code: Code.Unauthenticated,
      });
    }
    expect((await failure(s.client.pingAgent({ agentId: "" }))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.client.pingAgent({ agentId: newId() }))).code).toBe(Code.Unauthenticated);
  });

  it("refuses secrets longer than 200 characters before any lookup", async () => {
    const s = await setup();
    const store = async (secret: string) =>
      s.clustersRepo.insertAgentToken({
        _id: newId(),
        hash: hashSecret(secret),
        organizationId: s.orgId,
        clusterId: null,
        description: "",
        createdAt: new Date(T0),
        revokedAt: null,
      });
    const longest = `bkat_${"a".repeat(195)}`;
    const tooLong = `bkat_${"b".repeat(196)}`;
    expect([longest.length, tooLong.length]).toEqual([200, 201]);
    await store(longest);
    await store(tooLong);
    const lookups = jest.spyOn(s.clustersRepo, "findAgentTokenByHash");

    expect((await s.authenticate(longest)).kind).toBe(CredentialKind.REGISTRATION);
    expect(lookups).toHaveBeenCalledTimes(1);
    expect((await failure(s.authenticate(tooLong))).code).toBe(Code.Unauthenticated);
    expect((await failure(s.authenticate(`bkaa_${"c".repeat(5000)}`))).code).toBe(Code.Unauthenticated);
    expect(lookups).toHaveBeenCalledTimes(1);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Registration and connection
// ---------------------------------------------------------------------------------------------------------------

describe("registration", () => {
  it("registers an agent of the token's organization and cluster, never connected, with positive intervals", async () => {
    const s = await setup();
    const { res, accessToken, id } = await s.register({
      name: "  ci-1 ",
      hostname: " builder.local ",
      os: "NAME=Debian\nVERSION=12\n",
      arch: "amd64",
      version: "3.137.0",
      metaData: [" os=linux ", "  ", "queue=deploy"],
      priority: 5,
      pid: 4242,
      machineId: "m-1",
    });
    expect(res.agent).toMatchObject({
      id,
      organizationId: s.orgId,
      clusterId: s.clusterId,
      tokenId: s.tokenId,
      name: "ci-1",
      hostname: "builder.local",
      os: "NAME=Debian\nVERSION=12",
      metaData: ["os=linux", "queue=deploy"],
      queue: "deploy",
      priority: 5,
      pid: 4242,
      connectionState: "never_connected",
      currentJobId: "",
    });
    expect(iso(res.agent?.createdAt)).toBe(new Date(T0).toISOString());
    expect(iso(res.agent?.lastSeenAt)).toBe(new Date(T0).toISOString());
    expect(accessToken).toMatch(/^bkaa_/);
    expect(s.agentsRepo.allAgents()[0]?.accessTokenHash).toBe(hashSecret(accessToken));
    expect({
      ping: res.pingInterval,
      heartbeat: res.heartbeatInterval,
      jobStatus: res.jobStatusInterval,
    }).toEqual({ ping: 2, heartbeat: 10, jobStatus: 1 });
  });

  it("picks a name from the hostname when the agent sends none", async () => {
    const s = await setup();
    const fromHost = await s.register({ name: "", hostname: " build-box " });
    expect(fromHost.res.agent?.name).toMatch(/^build-box-[0-9a-f]{6}$/);
    const blank = await s.register({ name: "   ", hostname: "" });
    expect(blank.res.agent?.name).toMatch(/^agent-[0-9a-f]{6}$/);
  });

  it("puts an agent in the queue its tags name, and in default without one", async () => {
    const s = await setup();
    const queue = async (metaData: string[]) => (await s.register({ metaData })).res.agent?.queue;
    expect(await queue(["queue=deploy", "os=linux"])).toBe("deploy");
    expect(await queue([" queue = gpu "])).toBe("gpu");
    expect(await queue(["os=linux"])).toBe("default");
    expect(await queue(["queue="])).toBe("default");
    expect(await queue([])).toBe("default");
  });

  it("registers an agent of an unclustered token without a cluster", async () => {
    const s = await setup();
    const bare = await s.place(false);
    const { res } = await s.register({}, bare.tokenId);
    expect(res.agent).toMatchObject({ organizationId: bare.orgId, clusterId: "" });
  });

  it("refuses oversized and control-character fields with a field error each, storing nothing", async () => {
    const s = await setup();
    const invalid = async (init: RegisterInit) => {
      const { code, err } = await failure(s.register(init));
      expect(code).toBe(Code.InvalidArgument);
      return err ? fieldErrorsOf(err) : [];
    };
    const tooLong = "is too long (maximum is 255 characters)";
    expect(await invalid({ name: "n".repeat(256) })).toEqual([{ field: "name", code: tooLong }]);
    expect(await invalid({ hostname: "h".repeat(256) })).toEqual([{ field: "hostname", code: tooLong }]);
    expect(await invalid({ machineId: "m".repeat(256) })).toEqual([{ field: "machine_id", code: tooLong }]);
    expect(await invalid({ os: "o".repeat(4097) })).toEqual([
      { field: "os", code: "is too long (maximum is 4096 characters)" },
    ]);
    expect(await invalid({ metaData: Array.from({ length: 101 }, (_, i) => `t${i}=1`) })).toEqual([
      { field: "meta_data", code: "an agent may have at most 100 tags" },
    ]);
    expect(await invalid({ metaData: ["os=lin\u0000ux"] })).toEqual([
      { field: "meta_data", code: "tags must not contain control characters" },
    ]);
    // Every problem at once.
    expect(await invalid({ name: "a\tb", hostname: "x".repeat(300), version: "3.0\n" })).toEqual([
      { field: "name", code: "must not contain control characters" },
      { field: "hostname", code: tooLong },
      { field: "version", code: "must not contain control characters" },
    ]);
    expect(s.agentsRepo.allAgents()).toEqual([]);

    // The bounds themselves are allowed.
    const edge = await s.register({
      name: "n".repeat(255),
      os: "o".repeat(4096),
      metaData: Array.from({ length: 100 }, (_, i) => `t${i}=1`),
    });
    expect(edge.res.agent?.name).toHaveLength(255);
    expect(edge.res.agent?.metaData).toHaveLength(100);
  });

  it("connects an agent: connected, seen now, with the caller's user agent and address, announced", async () => {
    const s = await setup();
    const a = await s.register();
    s.clock.advance(5_000);
    const { agent } = await s.client.connectAgent({
      agentId: a.id,
      userAgent: "buildkite-agent/3.137.0",
      ipAddress: "10.0.0.7",
    });
    expect(agent).toMatchObject({
      connectionState: "connected",
      userAgent: "buildkite-agent/3.137.0",
      ipAddress: "10.0.0.7",
    });
    expect(iso(agent?.connectedAt)).toBe(new Date(T0 + 5_000).toISOString());
    expect(iso(agent?.lastSeenAt)).toBe(new Date(T0 + 5_000).toISOString());
    expect(s.events.on(SUBJECTS.agents.agentConnected)).toEqual([
      expect.objectContaining({ previousState: "never_connected", agent: expect.objectContaining({ id: a.id }) }),
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------------------------------------------

describe("dispatch", () => {
  it("offers the best matching job of the agent's own organization and cluster: priority, then runnable time", async () => {
    const s = await setup();
    const other = await s.place();
    const sameOrgOtherCluster = (await s.client.createCluster({ organizationId: s.orgId, name: "Second" })).cluster;
    const old = await s.job({ runnableAt: 0 });
    const recent = await s.job({ runnableAt: 10_000 });
    const urgent = await s.job({ priority: 5, runnableAt: 20_000 });
    const lowly = await s.job({ priority: -1, runnableAt: -50_000 });
    await s.job({ clusterId: sameOrgOtherCluster?.id ?? "", priority: 100 });
    await s.job({ clusterId: "", priority: 100 });
    await s.job({ orgId: other.orgId, clusterId: other.clusterId, priority: 100 });

    const offers: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await s.agent();
      offers.push((await s.client.pingAgent({ agentId: a.id })).jobId);
    }
    expect(offers).toEqual([urgent, old, recent, lowly, ""]);
  });

  it("assigns the job to the agent in the builds service, holds it, and announces job_dispatched", async () => {
    const s = await setup();
    const a = await s.agent({ name: "runner", metaData: ["os=linux"] });
    const jobId = await s.job();
    const answer = await s.client.pingAgent({ agentId: a.id });
    expect(answer).toMatchObject({ action: "idle", jobId, message: "" });
    expect(await held(s, jobId)).toEqual({ state: "assigned", agent: a.id });
    expect((await s.builds.job(jobId)).agent).toMatchObject({ name: "runner", metaData: ["os=linux"] });
    expect((await s.getAgent(a.id))?.currentJobId).toBe(jobId);
    expect(s.events.on(SUBJECTS.agents.jobDispatched)).toEqual([
      { jobId, agentId: a.id, organizationId: s.orgId, clusterId: s.clusterId },
    ]);
  });

  it("offers an unclustered agent only its organization's unclustered jobs", async () => {
    const s = await setup();
    const bare = await s.place(false);
    await s.job({ orgId: bare.orgId, clusterId: newId(), priority: 9 });
    await s.job({ orgId: s.orgId, clusterId: "", priority: 9 });
    const mine = await s.job({ orgId: bare.orgId, clusterId: "" });
    const a = await s.agent({}, bare.tokenId);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(mine);
    expect((await s.client.pingAgent({ agentId: (await s.agent({}, bare.tokenId)).id })).jobId).toBe("");
  });

  it("matches queues and tags, with * in a rule's value", async () => {
    const s = await setup();
    const plain = await s.job({ runnableAt: 1 });
    const deploy = await s.job({ rules: ["queue=deploy"], runnableAt: 2 });
    const arm = await s.job({ rules: ["queue=deploy", "os=linux-arm*"], runnableAt: 3 });
    const anyQueueGpu = await s.job({ rules: ["queue=*", "gpu=*"], runnableAt: 4 });
    const mac = await s.job({ rules: ["queue=dep*", "os=mac*"], runnableAt: 5 });

    const offered = async (metaData: string[]) => {
      const a = await s.agent({ metaData });
      const ids: string[] = [];
      for (;;) {
        const { jobId } = await s.client.pingAgent({ agentId: a.id });
        if (!jobId || ids.includes(jobId)) return ids;
        ids.push(jobId);
        // The agent runs the job to the end, so its next ping offers the next match.
        await s.client.acceptJob({ agentId: a.id, jobId });
        await start(s, jobId, a.id);
        await s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 });
      }
    };
    // A deploy agent on arm: the deploy jobs it satisfies, never the default queue's job.
    expect(await offered(["queue=deploy", "os=linux-arm64"])).toEqual([deploy, arm]);
    // A default agent with a gpu tag: the default job and the any-queue gpu job.
    expect(await offered(["gpu=a100"])).toEqual([plain, anyQueueGpu]);
    // A mac deploy agent: only the wildcard-queue mac job is left.
    expect(await offered(["queue=deploy", "os=macos-14"])).toEqual([mac]);
  });

  it("gives one job to exactly one of two agents pinging at once (one process)", async () => {
    for (let round = 0; round < 25; round++) {
      const s = await setup();
      const rand = seeded(round);
      s.builds.jitter = () => Math.floor(rand() * 3);
      const [a, b] = [await s.agent(), await s.agent()];
      const jobId = await s.job();
      const answers = await Promise.all([a, b].map((x) => s.client.pingAgent({ agentId: x.id })));
      const winners = [a, b].filter((_, i) => answers[i]?.jobId === jobId).map((x) => x.id);
      expect({ round, winners: winners.length }).toEqual({ round, winners: 1 });
      expect(answers.map((x) => x.jobId).sort()).toEqual(["", jobId].sort());
      expect(await held(s, jobId)).toEqual({ state: "assigned", agent: winners[0] });
      const holders = s.agentsRepo.allAgents().filter((x) => x.currentJobId === jobId);
      expect(holders.map((x) => x._id)).toEqual(winners);
    }
  });

  it("gives one job to exactly one of two agents pinging two processes at once; the loser is refused by builds", async () => {
    let refusedSomewhere = 0;
    for (let round = 0; round < 25; round++) {
      const s = await setup();
      const second = s.replica();
      const rand = seeded(1000 + round);
      s.builds.jitter = () => Math.floor(rand() * 4);
      const [a, b] = [await s.agent(), await s.agent()];
      // Each process learns of the job from its own job_state_changed subscription.
      const jobId = await s.job();
      const answers = await Promise.all([
        s.client.pingAgent({ agentId: a.id }),
        second.client.pingAgent({ agentId: b.id }),
      ]);
      const winners = [a, b].filter((_, i) => answers[i]?.jobId === jobId).map((x) => x.id);
      expect({ round, winners: winners.length }).toEqual({ round, winners: 1 });
      expect(await held(s, jobId)).toEqual({ state: "assigned", agent: winners[0] });
      expect(s.agentsRepo.allAgents().filter((x) => x.currentJobId === jobId)).toHaveLength(1);
      expect(s.events.on(SUBJECTS.agents.jobDispatched)).toHaveLength(1);
      refusedSomewhere += s.builds.callsOf("assignJob").length - 1;
    }
    // Both processes did try the job in the rounds: builds' compare-and-set is what kept it single.
    expect(refusedSomewhere).toBeGreaterThan(0);
  });

  it("lets one agent pinging twice at once hold one job; a second assignment goes back to the queue", async () => {
    for (let round = 0; round < 25; round++) {
      const s = await setup();
      const rand = seeded(2000 + round);
      s.builds.jitter = () => Math.floor(rand() * 3);
      const a = await s.agent();
      const jobs = [await s.job({ runnableAt: 0 }), await s.job({ runnableAt: 1 })];
      const answers = await Promise.all([1, 2].map(() => s.client.pingAgent({ agentId: a.id })));
      const holding = (await s.getAgent(a.id))?.currentJobId ?? "";
      expect({ round, holds: jobs.includes(holding) }).toEqual({ round, holds: true });
      for (const answer of answers) expect(["", holding]).toContain(answer.jobId);
      for (const jobId of jobs) {
        expect(await held(s, jobId)).toEqual(
          jobId === holding ? { state: "assigned", agent: a.id } : { state: "scheduled", agent: "" },
        );
      }
    }
  });

  it("falls through a refused assignment (job no longer scheduled, or gone) to the next candidate", async () => {
    const s = await setup();
    const canceled = await s.job({ priority: 10 });
    const vanished = await s.job({ priority: 9 });
    const good = await s.job({ priority: 0 });
    // Changes this process never heard of: its hints still say both wait.
    await s.builds.change(canceled, "scheduled", { state: "canceled" });
    await s.builds.remove(vanished, "scheduled");

    const a = await s.agent();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(good);
    expect(s.builds.callsOf("assignJob").map((r) => (r as { jobId: string }).jobId)).toEqual([
      canceled,
      vanished,
      good,
    ]);
    // The refused ones are forgotten: nobody tries them again.
    const b = await s.agent();
    expect((await s.client.pingAgent({ agentId: b.id })).jobId).toBe("");
    expect(s.builds.callsOf("assignJob")).toHaveLength(3);
  });

  it("tries five candidates per ping and the rest on the next ping", async () => {
    const s = await setup();
    const stale = await s.seed(Array.from({ length: 6 }, (_, i) => ({ priority: 10 + i })));
    for (const id of stale) await s.builds.change(id, "scheduled", { state: "canceled" });
    const good = await s.job({ priority: 0 });
    const a = await s.agent();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe("");
    expect(s.builds.callsOf("assignJob")).toHaveLength(5);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(good);
    expect(s.builds.callsOf("assignJob")).toHaveLength(7);
  });

  it("fails a ping whose assignment fails for another reason, leaving the agent free", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.job();
    s.builds.failNext("assignJob", new ConnectError("builds is down", Code.Unavailable));
    expect((await failure(s.client.pingAgent({ agentId: a.id }))).code).toBe(Code.Unavailable);
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
  });

  it("offers an agent the job it already holds, assigned and unaccepted, again and nothing else", async () => {
    const s = await setup();
    const a = await s.agent();
    const first = await s.job({ priority: 1 });
    const second = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(first);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(first);
    expect(s.builds.callsOf("assignJob")).toHaveLength(1);
    expect(await held(s, second)).toEqual({ state: "scheduled", agent: "" });
    expect(s.events.on(SUBJECTS.agents.jobDispatched)).toHaveLength(1);
  });

  it("frees an agent whose held job finished elsewhere and offers it a new one", async () => {
    const s = await setup();
    const a = await s.agent();
    const first = await s.job({ priority: 1 });
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(first);
    const second = await s.job();
    s.clock.advance(1_000);
    await s.builds.change(first, "assigned", { state: "canceled" });

    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(second);
    const agent = await s.getAgent(a.id);
    expect(agent?.currentJobId).toBe(second);
    expect(iso(agent?.lastJobFinishedAt)).toBe(new Date(T0 + 1_000).toISOString());
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toContainEqual({ jobId: first });
  });

  it("frees an agent whose held job no longer exists and offers it a new one", async () => {
    const s = await setup();
    const a = await s.agent();
    const first = await s.job({ priority: 1 });
    await s.client.pingAgent({ agentId: a.id });
    await s.builds.remove(first, "assigned");
    const second = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(second);
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toContainEqual({ jobId: first });
  });

  it("frees an agent whose held job was reassigned to another agent", async () => {
    const s = await setup();
    const a = await s.agent();
    const first = await s.job({ priority: 1 });
    await s.client.pingAgent({ agentId: a.id });
    const other = { id: newId(), name: "other", hostname: "box", ipAddress: "", userAgent: "", createdAt: null };
    await s.builds.change(first, "assigned", {
      state: "running",
      agent: { ...other, connectionState: "connected", metaData: [] },
    });
    const second = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(second);
    // The job of the other agent is left alone.
    expect(s.builds.transitions()).toEqual([]);
  });

  it("offers an accepted job again to its agent when the answer to the accept was lost, and accepts it again", async () => {
    const s = await setup();
    const a = await s.agent();
    // The accept went through, but the agent saw an error (a server cut off mid-call) and pinged again.
    const { jobId } = await s.takeJob(a.id);
    await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "accepted" });
    const again = await s.client.acceptJob({ agentId: a.id, jobId });
    expect(again.job?.id).toBe(jobId);
    expect(await s.authenticate(again.jobToken)).toMatchObject({ kind: CredentialKind.JOB, jobId });
    expect(s.builds.transitions()).toEqual([]);
  });

  it("fails the running job of an agent that pings (it crashed mid-job) and offers it a new one", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    const next = await s.job();

    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(next);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "failed", exitStatus: -1, signalReason: "agent_stop" });
    expect((await failure(s.authenticate(jobToken))).code).toBe(Code.Unauthenticated);
  });

  it("answers a stream's ask for an agent running a job with that job, leaving it running (only a poll means it was lost)", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    await s.job();
    expect(await s.client.pingAgent({ agentId: a.id, forStream: true })).toMatchObject({
      action: "idle",
      jobId: "",
      heldJobId: jobId,
    });
    await s.agentsRepo.updateAgent(a.id, { paused: true, pausedNote: "disk full", pausedAt: new Date(T0) });
    s.domain.agentChanged(a.id);
    expect(await s.client.pingAgent({ agentId: a.id, forStream: true })).toMatchObject({
      action: "pause",
      message: "Paused: disk full",
      heldJobId: jobId,
    });
    expect(await s.builds.job(jobId)).toMatchObject({ state: "running" });
    expect(s.builds.transitions().filter((t) => t.jobId === jobId && t.event === JobEventType.FINISH)).toEqual([]);
    // Idle, it is offered a job as by its own poll.
    await s.agentsRepo.updateAgent(a.id, { paused: false, currentJobId: null });
    s.domain.agentChanged(a.id);
    const offered = await s.client.pingAgent({ agentId: a.id, forStream: true });
    expect(offered.jobId).not.toBe("");
    expect(offered.heldJobId).toBe("");
  });

  it("tells a paused agent to pause and offers it nothing", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    // Paused by another process: this one learns of it through agent_changed.
    await s.agentsRepo.updateAgent(a.id, { paused: true, pausedNote: "disk full", pausedAt: new Date(T0) });
    s.domain.agentChanged(a.id);
    expect(await s.client.pingAgent({ agentId: a.id })).toMatchObject({
      action: "pause",
      jobId: "",
      message: "Paused: disk full",
    });
    await s.agentsRepo.updateAgent(a.id, { pausedNote: null });
    s.domain.agentChanged(a.id);
    expect(await s.client.pingAgent({ agentId: a.id })).toMatchObject({ action: "pause", message: "" });
    expect(await held(s, jobId)).toEqual({ state: "scheduled", agent: "" });
    expect(s.builds.callsOf("assignJob")).toEqual([]);
  });

  it("keeps using its cached agent until agent_changed drops it", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.job();
    await s.agentsRepo.updateAgent(a.id, { paused: true });
    // Not announced yet: the cached, unpaused agent is offered the job.
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("idle");
    const b = await s.agent();
    await s.agentsRepo.updateAgent(b.id, { paused: true });
    s.domain.agentChanged(b.id);
    expect((await s.client.pingAgent({ agentId: b.id })).action).toBe("pause");
  });

  it("offers nothing to an agent registered to be ignored in dispatches", async () => {
    const s = await setup();
    const ignored = await s.agent({ ignoreInDispatches: true });
    const jobId = await s.job();
    expect(await s.client.pingAgent({ agentId: ignored.id })).toMatchObject({ action: "idle", jobId: "" });
    expect(s.builds.callsOf("assignJob")).toEqual([]);
    const normal = await s.agent();
    expect((await s.client.pingAgent({ agentId: normal.id })).jobId).toBe(jobId);
  });

  it("learns of waiting jobs from job events: scheduled script jobs wait, anything else does not", async () => {
    const s = await setup();
    const a = await s.agent();
    const unheard = await s.job({ priority: 5 }, false);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe("");

    await s.builds.announce(unheard);
    const trigger = await s.job({ type: "trigger", priority: 9 });
    const canceled = await s.job({ priority: 8 });
    await s.builds.change(canceled, "scheduled", { state: "canceled" });
    await s.builds.announce(canceled);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(unheard);
    expect(s.builds.callsOf("assignJob").map((r) => (r as { jobId: string }).jobId)).toEqual([unheard]);
    expect((await held(s, trigger)).state).toBe("scheduled");
  });

  it("replaces the hints on a full refresh and merges a truncated one", async () => {
    const s = await setup();
    const a = await s.agent();
    // Known from an event only: it stopped waiting since, and nobody announced it.
    const eventOnly = await s.job({ priority: 5 });
    await s.builds.change(eventOnly, "scheduled", { state: "canceled" });
    const listed = await s.job({ priority: 1 }, false);
    await s.domain.refreshHints();
    expect(s.builds.callsOf("listDispatchableJobs")).toEqual([expect.objectContaining({ limit: 1000 })]);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(listed);
    // The event-only job is not even tried: the complete list replaced what the events had said.
    expect(s.builds.callsOf("assignJob").map((r) => (r as { jobId: string }).jobId)).toEqual([listed]);

    // A list cut at its limit (1000 jobs of another organization, all before this one) keeps what events told.
    const t = await setup();
    const b = await t.agent();
    const kept = await t.job({ priority: 5 });
    const elsewhere = await t.place();
    const cut = Array.from({ length: 1000 }, () => ({ priority: 10 }));
    const [first] = await t.seed(cut, elsewhere, false);
    await t.domain.refreshHints();
    expect((await t.client.pingAgent({ agentId: b.id })).jobId).toBe(kept);
    // After a cut list, the next refreshes are skipped (events keep the hints), then one reads again.
    for (let i = 0; i < TRUNCATED_REFRESH_SKIPS; i++) await t.domain.refreshHints();
    expect(t.builds.callsOf("listDispatchableJobs")).toHaveLength(1);
    // The other organization's jobs go (their pipeline was deleted): the next list is complete.
    await t.builds.repos.builds.removeBuilds([(await t.builds.job(first ?? "")).buildId]);
    await t.domain.refreshHints();
    expect(t.builds.callsOf("listDispatchableJobs")).toHaveLength(2);
    // That one was complete: every later refresh reads.
    await t.domain.refreshHints();
    expect(t.builds.callsOf("listDispatchableJobs")).toHaveLength(3);

    // A list one short of the limit is complete: a job known from an event only is dropped.
    const u = await setup();
    const c = await u.agent();
    const gone = await u.job({ priority: 5 });
    await u.builds.change(gone, "scheduled", { state: "canceled" });
    await u.seed(cut.slice(1), elsewhere, false);
    await u.domain.refreshHints();
    expect((await u.client.pingAgent({ agentId: c.id })).jobId).toBe("");
    expect(u.builds.callsOf("assignJob")).toEqual([]);
  });

  it("learns of jobs it never heard of on a refresh", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job({}, false);
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe("");
    await s.domain.refreshHints();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Accept and finish
// ---------------------------------------------------------------------------------------------------------------

describe("accept and finish", () => {
  it("accepts the offered job with a job token (bkaj_) that authenticates as that job", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    const accepted = await s.client.acceptJob({ agentId: a.id, jobId });
    const { buildId } = await s.builds.job(jobId);
    expect(accepted.job).toMatchObject({ id: jobId, buildId, state: "accepted" });
    // The job's environment, as the builds service makes it (docs/compatibility.md#the-job-object).
    expect(accepted.env).toMatchObject({
      BUILDKITE_JOB_ID: jobId,
      BUILDKITE_BUILD_ID: buildId,
      BUILDKITE_ORGANIZATION_ID: s.orgId,
      BUILDKITE_COMMAND: "make test",
    });
    expect(accepted.jobToken).toMatch(/^bkaj_[0-9a-f]{40}$/);
    expect(await s.authenticate(accepted.jobToken)).toMatchObject({
      kind: CredentialKind.JOB,
      organizationId: s.orgId,
      clusterId: s.clusterId,
      agentId: a.id,
      jobId,
      buildId,
      tokenId: "",
    });
    expect((await s.getAgent(a.id))?.currentJobId).toBe(jobId);
  });

  it("refuses to accept a job assigned to another agent, issuing no token", async () => {
    const s = await setup();
    const [a, b] = [await s.agent(), await s.agent()];
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    expect((await failure(s.client.acceptJob({ agentId: b.id, jobId }))).code).toBe(Code.NotFound);
    expect((await failure(s.client.acceptJob({ agentId: b.id, jobId: newId() }))).code).toBe(Code.NotFound);
    expect((await failure(s.client.acceptJob({ agentId: b.id, jobId: "" }))).code).toBe(Code.NotFound);
    expect(s.agentsRepo.allJobTokens()).toEqual([]);
    expect(await held(s, jobId)).toEqual({ state: "assigned", agent: a.id });
    expect((await s.getAgent(a.id))?.currentJobId).toBe(jobId);
  });

  it("frees an agent whose held job can no longer be accepted", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    await s.builds.change(jobId, "assigned", { state: "canceled" });
    expect((await failure(s.client.acceptJob({ agentId: a.id, jobId }))).code).toBe(Code.FailedPrecondition);
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
  });

  it("refuses accepts from agents that are gone", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    await s.client.disconnectAgent({ agentId: a.id });
    expect((await failure(s.client.acceptJob({ agentId: a.id, jobId }))).code).toBe(Code.Unauthenticated);
  });

  it("finishes a job: the agent is free, the job token revoked and announced", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    s.clock.advance(30_000);
    const finishedAt = new Date(T0 + 29_000);

    const { job } = await s.client.finishJob({
      agentId: a.id,
      jobId,
      exitStatus: 0,
      signal: "",
      signalReason: "",
      finishedAt: timestampFromDate(finishedAt),
    });
    expect(job).toMatchObject({ id: jobId, state: "passed", exitStatus: 0 });
    expect(s.builds.transitions().at(-1)).toEqual({
      jobId,
      event: JobEventType.FINISH,
      exitStatus: 0,
      signal: "",
      signalReason: "",
      agentId: a.id,
      at: finishedAt,
    });
    const agent = await s.getAgent(a.id);
    expect(agent?.currentJobId).toBe("");
    expect(iso(agent?.lastJobFinishedAt)).toBe(new Date(T0 + 30_000).toISOString());
    expect((await failure(s.authenticate(jobToken))).code).toBe(Code.Unauthenticated);
    expect(s.agentsRepo.allJobTokens().map((t) => t.revokedAt?.toISOString())).toEqual([
      new Date(T0 + 30_000).toISOString(),
    ]);
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toContainEqual({ jobId });

    // Free again: the next ping offers the next job.
    const next = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(next);
  });

  it("records a failing exit status and the signal the agent reports", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    const { job } = await s.client.finishJob({
      agentId: a.id,
      jobId,
      exitStatus: 137,
      signal: "SIGKILL",
      signalReason: "cancel",
    });
    expect(job).toMatchObject({ state: "failed", exitStatus: 137, signal: "SIGKILL", signalReason: "cancel" });
  });

  // Found by the agent API fuzzer (test/fuzz-agent.e2e.test.ts): a refused finish let go of a job the agent still
  // held, so a 422 changed the agent (free, last_job_finished_at set) and left the job accepted with no agent.
  it("refuses a finish before the start (FailedPrecondition) and changes nothing: the next ping offers the job again", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    // Not started: a FINISH from "accepted" is refused.
    const refusedFinish = await failure(s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 }));
    expect(refusedFinish.code).toBe(Code.FailedPrecondition);
    expect(refusedFinish.message).toMatch(/^The job can't be finished: a job in state "accepted" cannot be finished/);
    const agent = await s.getAgent(a.id);
    expect([agent?.currentJobId, agent?.lastJobFinishedAt]).toEqual([jobId, undefined]);
    expect(await s.authenticate(jobToken)).toMatchObject({ kind: CredentialKind.JOB, jobId });
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toEqual([]);
    expect(await held(s, jobId)).toEqual({ state: "accepted", agent: a.id });
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);
  });

  it("refuses an accept of the job the agent runs (FailedPrecondition) and changes nothing", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    expect((await failure(s.client.acceptJob({ agentId: a.id, jobId }))).code).toBe(Code.FailedPrecondition);
    expect((await s.getAgent(a.id))?.currentJobId).toBe(jobId);
    expect(await s.authenticate(jobToken)).toMatchObject({ kind: CredentialKind.JOB, jobId });
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toEqual([]);
    expect((await s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 })).job?.state).toBe("passed");
  });

  it("frees the agent when a refused finish is of a job it no longer holds (canceled and finished elsewhere)", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await s.builds.change(jobId, "accepted", { state: "canceled" });
    expect((await failure(s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 }))).code).toBe(
      Code.FailedPrecondition,
    );
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
    expect((await failure(s.authenticate(jobToken))).code).toBe(Code.Unauthenticated);
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toContainEqual({ jobId });
  });

  it("refuses a repeated finish without changing the finished job", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    await s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 });
    const again = await failure(s.client.finishJob({ agentId: a.id, jobId, exitStatus: 1 }));
    expect(again.code).toBe(Code.FailedPrecondition);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "passed", exitStatus: 0 });
  });

  it("keeps the job token and the job when the builds service is unreachable, so the agent can retry", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    s.builds.failNext("transitionJob", new ConnectError("connection refused", Code.Unavailable));

    expect((await failure(s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 }))).code).toBe(Code.Unavailable);
    expect(await s.authenticate(jobToken)).toMatchObject({ kind: CredentialKind.JOB, jobId });
    expect((await s.getAgent(a.id))?.currentJobId).toBe(jobId);
    expect(s.events.on(SUBJECTS.agents.credentialRevoked)).toEqual([]);

    expect((await s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 })).job?.state).toBe("passed");
    expect((await failure(s.authenticate(jobToken))).code).toBe(Code.Unauthenticated);
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Liveness
// ---------------------------------------------------------------------------------------------------------------

describe("liveness", () => {
  it("notes pings and heartbeats in memory only, and writes them all in one touchAgents call on flush", async () => {
    const s = await setup();
    const [a, b] = [await s.agent(), await s.agent()];
    const touch = jest.spyOn(s.agentsRepo, "touchAgents");
    const update = jest.spyOn(s.agentsRepo, "updateAgent");
    const insert = jest.spyOn(s.agentsRepo, "insertAgent");

    for (let i = 0; i < 10; i++) {
      s.clock.advance(2_000);
      await s.client.pingAgent({ agentId: a.id });
      await s.client.heartbeatAgent({ agentId: b.id });
    }
    const heartbeat = await s.client.heartbeatAgent({ agentId: b.id });
    expect(iso(heartbeat.receivedAt)).toBe(new Date(T0 + 20_000).toISOString());
    expect(touch).not.toHaveBeenCalled();
    expect(update).not.toHaveBeenCalled();
    expect(insert).not.toHaveBeenCalled();
    expect(s.agentsRepo.allAgents().map((x) => x.lastSeenAt.getTime())).toEqual([T0, T0]);

    await s.domain.flushLiveness();
    expect(touch).toHaveBeenCalledTimes(1);
    expect(touch.mock.calls[0]?.[0]).toEqual(
      new Map([
        [a.id, new Date(T0 + 20_000)],
        [b.id, new Date(T0 + 20_000)],
      ]),
    );
    expect(s.agentsRepo.allAgents().map((x) => x.lastSeenAt.getTime())).toEqual([T0 + 20_000, T0 + 20_000]);

    // Nothing noted since: nothing written.
    await s.domain.flushLiveness();
    expect(touch).toHaveBeenCalledTimes(1);
  });

  it("writes sightings rounded down to a twelfth of the lost window, so that agents seen close together share a time", async () => {
    const s = await setup();
    const [a, b, c] = [await s.agent(), await s.agent(), await s.agent()];
    const touch = jest.spyOn(s.agentsRepo, "touchAgents");
    s.clock.advance(1_200);
    await s.client.pingAgent({ agentId: a.id });
    s.clock.advance(2_500);
    await s.client.heartbeatAgent({ agentId: b.id });
    s.clock.advance(2_400);
    await s.client.pingAgent({ agentId: c.id });
    await s.domain.flushLiveness();
    // A twelfth of the minute is 5 s: 1.2 s and 3.7 s are written as 0 s, 6.1 s as 5 s (never later than seen).
    expect(touch.mock.calls[0]?.[0]).toEqual(
      new Map([
        [a.id, new Date(T0)],
        [b.id, new Date(T0)],
        [c.id, new Date(T0 + 5_000)],
      ]),
    );
  });

  it("writes an agent's latest sighting at most once a quarter of the lost window", async () => {
    const s = await setup();
    const a = await s.agent();
    const touch = jest.spyOn(s.agentsRepo, "touchAgents");
    const quarter = CONFIG.lostAfterMs / 4;
    await s.domain.flushLiveness(); // the connect's sighting: first, so due
    expect(touch.mock.calls.map((c) => c[0])).toEqual([new Map([[a.id, new Date(T0)]])]);

    s.clock.advance(quarter - 1_000);
    await s.client.pingAgent({ agentId: a.id });
    await s.domain.flushLiveness();
    expect(touch).toHaveBeenCalledTimes(1);
    expect(s.agentsRepo.allAgents()[0]?.lastSeenAt).toEqual(new Date(T0));

    s.clock.advance(1_000);
    await s.client.heartbeatAgent({ agentId: a.id });
    await s.domain.flushLiveness();
    expect(touch.mock.calls.map((c) => c[0])).toEqual([
      new Map([[a.id, new Date(T0)]]),
      new Map([[a.id, new Date(T0 + quarter)]]),
    ]);
    expect(s.agentsRepo.allAgents()[0]?.lastSeenAt).toEqual(new Date(T0 + quarter));
  });

  it("writes the last sighting of an agent that went quiet before its write was due", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.domain.flushLiveness();
    s.clock.advance(5_000);
    await s.client.pingAgent({ agentId: a.id });
    await s.domain.flushLiveness(); // not due yet: a quarter window has not passed since the last write
    expect(s.agentsRepo.allAgents()[0]?.lastSeenAt).toEqual(new Date(T0));
    s.clock.advance(CONFIG.lostAfterMs / 4);
    await s.domain.flushLiveness(); // no new sighting, but the held-back one is now due
    expect(s.agentsRepo.allAgents()[0]?.lastSeenAt).toEqual(new Date(T0 + 5_000));
  });

  it("ends the job of a lost agent on a later sweep when the builds service was down the first time", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    s.clock.advance(CONFIG.lostAfterMs + 1);
    s.builds.failNext("getJob", new ConnectError("builds is down", Code.Unavailable));
    await expect(s.domain.sweepLost()).rejects.toThrow(/builds is down/);
    expect((await s.getAgent(a.id))?.connectionState).toBe("lost");
    expect((await held(s, jobId)).state).toBe("running");
    s.clock.advance(10 * CONFIG.lostAfterMs);
    expect(await s.domain.sweepLost()).toBe(1);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "failed", exitStatus: -1, signalReason: "agent_lost" });
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
    expect(await s.domain.sweepLost()).toBe(0);
  });

  it("counts a sighting held back from the database when sweeping", async () => {
    const s = await setup();
    const a = await s.agent();
    await s.domain.flushLiveness();
    s.clock.advance(10_000);
    await s.client.pingAgent({ agentId: a.id });
    await s.domain.flushLiveness(); // not due: the database still says T0
    expect(s.agentsRepo.allAgents()[0]?.lastSeenAt).toEqual(new Date(T0));

    s.clock.t = T0 + CONFIG.lostAfterMs + 1;
    expect(await s.domain.sweepLost()).toBe(0);
    s.clock.t = T0 + 10_000 + CONFIG.lostAfterMs + 1;
    expect(await s.domain.sweepLost()).toBe(1);
  });

  it("keeps the sightings of a failed flush for the next one", async () => {
    const s = await setup();
    const a = await s.agent();
    s.clock.advance(5_000);
    await s.client.pingAgent({ agentId: a.id });
    const touch = jest.spyOn(s.agentsRepo, "touchAgents").mockRejectedValueOnce(new Error("db down"));
    await expect(s.domain.flushLiveness()).rejects.toThrow("db down");
    await s.domain.flushLiveness();
    expect(touch).toHaveBeenCalledTimes(2);
    expect(s.agentsRepo.allAgents()[0]?.lastSeenAt).toEqual(new Date(T0 + 5_000));
  });

  it("marks agents silent for longer than the window lost, counting sightings not yet flushed", async () => {
    const s = await setup();
    const flushed = await s.agent({ name: "flushed" });
    const silent = await s.agent({ name: "silent" });
    const unflushed = await s.agent({ name: "unflushed" });

    s.clock.advance(30_000);
    await s.client.pingAgent({ agentId: flushed.id });
    await s.domain.flushLiveness();
    s.clock.advance(20_000);
    await s.client.heartbeatAgent({ agentId: unflushed.id });

    // Exactly the window: not yet.
    s.clock.t = T0 + CONFIG.lostAfterMs;
    expect(await s.domain.sweepLost()).toBe(0);
    s.clock.t = T0 + CONFIG.lostAfterMs + 1;
    expect(await s.domain.sweepLost()).toBe(1);
    const states = async () =>
      Object.fromEntries(
        await Promise.all(
          [flushed, silent, unflushed].map(async (x) => {
            const agent = await s.getAgent(x.id);
            return [agent?.name, agent?.connectionState];
          }),
        ),
      );
    expect(await states()).toEqual({ flushed: "connected", silent: "lost", unflushed: "connected" });
    expect(iso((await s.getAgent(silent.id))?.lostAt)).toBe(new Date(T0 + CONFIG.lostAfterMs + 1).toISOString());
    expect(s.events.on(SUBJECTS.agents.agentLost)).toEqual([
      expect.objectContaining({ previousState: "connected", agent: expect.objectContaining({ id: silent.id }) }),
    ]);
    // A second sweep finds nothing more to do.
    expect(await s.domain.sweepLost()).toBe(0);

    s.clock.t = T0 + 50_000 + CONFIG.lostAfterMs + 1;
    expect(await s.domain.sweepLost()).toBe(2);
    expect(await states()).toEqual({ flushed: "lost", silent: "lost", unflushed: "lost" });
  });

  it("sweeps never-connected and stopping agents, but not disconnected or stopped ones", async () => {
    const s = await setup();
    const never = await s.register();
    const stopping = await s.agent();
    await s.client.stopAgent({ organizationId: s.orgId, id: stopping.id });
    await s.client.pingAgent({ agentId: stopping.id });
    const gone = await s.agent();
    await s.client.disconnectAgent({ agentId: gone.id });
    const stopped = await s.agent();
    await s.client.stopAgent({ organizationId: s.orgId, id: stopped.id });
    await s.client.disconnectAgent({ agentId: stopped.id });
    await s.domain.flushLiveness();

    s.clock.advance(CONFIG.lostAfterMs + 1);
    expect(await s.domain.sweepLost()).toBe(2);
    expect(new Set(s.events.agentsOn(SUBJECTS.agents.agentLost))).toEqual(new Set([never.id, stopping.id]));
    expect((await s.getAgent(gone.id))?.connectionState).toBe("disconnected");
    expect((await s.getAgent(stopped.id))?.connectionState).toBe("stopped");
  });

  it("puts a lost agent's unaccepted job back in the queue, where another agent gets it", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);

    s.clock.advance(CONFIG.lostAfterMs + 1);
    expect(await s.domain.sweepLost()).toBe(1);
    expect(s.builds.transitions()).toEqual([
      expect.objectContaining({ jobId, event: JobEventType.UNASSIGN, agentId: a.id }),
    ]);
    expect(await held(s, jobId)).toEqual({ state: "scheduled", agent: "" });
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");

    const b = await s.agent();
    expect((await s.client.pingAgent({ agentId: b.id })).jobId).toBe(jobId);
  });

  it("fails a lost agent's running job with exit status -1 and signal reason agent_lost", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    s.clock.advance(CONFIG.lostAfterMs + 1);
    expect(await s.domain.sweepLost()).toBe(1);

    expect(s.builds.transitions().slice(1)).toEqual([
      expect.objectContaining({
        jobId,
        event: JobEventType.FINISH,
        exitStatus: -1,
        signalReason: "agent_lost",
        agentId: a.id,
      }),
    ]);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "failed", exitStatus: -1, signalReason: "agent_lost" });
    expect((await failure(s.authenticate(jobToken))).code).toBe(Code.Unauthenticated);
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
  });

  it("starts, then fails, a lost agent's accepted but unstarted job", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    s.clock.advance(CONFIG.lostAfterMs + 1);
    await s.domain.sweepLost();
    expect(s.builds.transitions().map((t) => [t.event, t.agentId])).toEqual([
      [JobEventType.START, a.id],
      [JobEventType.FINISH, a.id],
    ]);
    expect(await s.builds.job(jobId)).toMatchObject({ state: "failed", exitStatus: -1, signalReason: "agent_lost" });
  });

  it("ends a lost agent's canceling job canceled", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    await s.builds.transitionJob({ jobId, event: JobEventType.CANCEL });
    s.clock.advance(CONFIG.lostAfterMs + 1);
    await s.domain.sweepLost();
    expect(await s.builds.job(jobId)).toMatchObject({ state: "canceled", exitStatus: -1 });
  });

  it("connects a lost agent again when it pings or heartbeats", async () => {
    const s = await setup();
    const [a, b] = [await s.agent(), await s.agent()];
    s.clock.advance(CONFIG.lostAfterMs + 1);
    expect(await s.domain.sweepLost()).toBe(2);

    s.clock.advance(1_000);
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("idle");
    await s.client.heartbeatAgent({ agentId: b.id });
    for (const x of [a, b]) {
      const agent = await s.getAgent(x.id);
      expect(agent?.connectionState).toBe("connected");
      expect(iso(agent?.lastSeenAt)).toBe(new Date(T0 + CONFIG.lostAfterMs + 1_001).toISOString());
    }
    const back = s.events.on(SUBJECTS.agents.agentConnected).filter((e) => e.previousState === "lost");
    expect(back.map((e) => (e.agent as { id: string }).id)).toEqual([a.id, b.id]);

    // Connected again, it takes work.
    const jobId = await s.job();
    expect((await s.client.pingAgent({ agentId: a.id })).jobId).toBe(jobId);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Stop and disconnect
// ---------------------------------------------------------------------------------------------------------------

describe("stop and disconnect", () => {
  it("without force: the next ping says disconnect, the agent is stopping, then stopped when it disconnects", async () => {
    const s = await setup();
    const a = await s.agent();
    const { agent } = await s.client.stopAgent({ organizationId: s.orgId, id: a.id });
    expect(agent).toMatchObject({ stopRequested: true, connectionState: "connected" });
    const jobId = await s.job();

    expect(await s.client.pingAgent({ agentId: a.id })).toMatchObject({
      action: "disconnect",
      jobId: "",
      message: "This agent was asked to stop.",
    });
    expect((await s.getAgent(a.id))?.connectionState).toBe("stopping");
    expect(s.events.agentsOn(SUBJECTS.agents.agentStopping)).toEqual([a.id]);
    expect(await held(s, jobId)).toEqual({ state: "scheduled", agent: "" });

    s.clock.advance(3_000);
    const { agent: after } = await s.client.disconnectAgent({ agentId: a.id });
    expect(after?.connectionState).toBe("stopped");
    expect(iso(after?.stoppedAt)).toBe(new Date(T0 + 3_000).toISOString());
    expect(iso(after?.disconnectedAt)).toBe(new Date(T0 + 3_000).toISOString());
    expect(s.events.on(SUBJECTS.agents.agentDisconnected)).toEqual([
      expect.objectContaining({ previousState: "stopping", agent: expect.objectContaining({ id: a.id }) }),
    ]);
    expect((await failure(s.authenticate(a.accessToken))).code).toBe(Code.Unauthenticated);
  });

  it("without force lets the running job go on", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    await s.client.stopAgent({ organizationId: s.orgId, id: a.id, force: false });
    expect(s.builds.transitions().filter((t) => t.event === JobEventType.CANCEL)).toEqual([]);
    expect(await held(s, jobId)).toEqual({ state: "running", agent: a.id });
    // It finishes its job, then is told to disconnect.
    await s.client.finishJob({ agentId: a.id, jobId, exitStatus: 0 });
    expect((await s.builds.job(jobId)).state).toBe("passed");
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("disconnect");
  });

  it("with force cancels the running job first", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    await s.client.stopAgent({ organizationId: s.orgId, id: a.id, force: true });
    expect(s.builds.transitions().filter((t) => t.event === JobEventType.CANCEL)).toEqual([
      expect.objectContaining({ jobId }),
    ]);
    expect(await held(s, jobId)).toEqual({ state: "canceling", agent: a.id });
    // The agent stops the process and reports it: the job ends canceled.
    expect((await s.client.finishJob({ agentId: a.id, jobId, exitStatus: -1, signal: "SIGTERM" })).job?.state).toBe(
      "canceled",
    );
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("disconnect");
  });

  it("with force cancels an unaccepted job, and the next ping lets it go", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    await s.client.stopAgent({ organizationId: s.orgId, id: a.id, force: true });
    expect((await held(s, jobId)).state).toBe("canceled");
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("disconnect");
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
  });

  it("gives an unaccepted job back when a stopping agent pings holding it", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    await s.client.stopAgent({ organizationId: s.orgId, id: a.id });
    expect((await s.client.pingAgent({ agentId: a.id })).action).toBe("disconnect");
    expect(await held(s, jobId)).toEqual({ state: "scheduled", agent: "" });
    expect((await s.getAgent(a.id))?.currentJobId).toBe("");
  });

  it("connects an agent asked to stop before it connected as stopping", async () => {
    const s = await setup();
    const a = await s.register();
    await s.client.stopAgent({ organizationId: s.orgId, id: a.id });
    const { agent } = await s.client.connectAgent({ agentId: a.id });
    expect(agent?.connectionState).toBe("stopping");
  });

  it("finds no agent of another organization, nor an unknown one, and refuses one that is not live", async () => {
    const s = await setup();
    const other = await s.place();
    const a = await s.agent();
    for (const [organizationId, id] of [
      [other.orgId, a.id],
      [s.orgId, newId()],
      [s.orgId, ""],
    ] as const) {
      expect((await failure(s.client.stopAgent({ organizationId, id, force: true }))).code).toBe(Code.NotFound);
    }
    expect((await s.getAgent(a.id))?.stopRequested).toBe(false);

    await s.client.disconnectAgent({ agentId: a.id });
    const refused = await failure(s.client.stopAgent({ organizationId: s.orgId, id: a.id }));
    expect(refused).toMatchObject({
      code: Code.FailedPrecondition,
      message: "Agent can't be stopped because it's disconnected",
    });
  });

  it("disconnects an agent that was not asked to stop: disconnected, its unaccepted job back in the queue", async () => {
    const s = await setup();
    const a = await s.agent();
    const jobId = await s.job();
    await s.client.pingAgent({ agentId: a.id });
    const { agent } = await s.client.disconnectAgent({ agentId: a.id });
    expect(agent).toMatchObject({ connectionState: "disconnected", currentJobId: "" });
    expect(agent?.stoppedAt).toBeUndefined();
    expect(await held(s, jobId)).toEqual({ state: "scheduled", agent: "" });
    expect(s.events.on(SUBJECTS.agents.agentDisconnected)).toEqual([
      expect.objectContaining({ previousState: "connected" }),
    ]);
  });

  it("fails the running job of an agent that disconnects without finishing it", async () => {
    const s = await setup();
    const a = await s.agent();
    const { jobId, jobToken } = await s.takeJob(a.id);
    await start(s, jobId, a.id);
    await s.client.disconnectAgent({ agentId: a.id });
    expect(await s.builds.job(jobId)).toMatchObject({ state: "failed", exitStatus: -1, signalReason: "agent_stop" });
    expect((await failure(s.authenticate(jobToken))).code).toBe(Code.Unauthenticated);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------------------------

describe("acquire-job", () => {
  it("assigns and accepts a scheduled job to the agent that names it, with a job token", async () => {
    const s = await setup();
    const a = await s.agent({ metaData: ["queue=default", "gpu=true"] });
    const jobId = await s.job({ rules: ["gpu=true"] });
    const res = await s.client.acquireJob({ agentId: a.id, jobId });
    expect(res.locked).toBe(false);
    expect(res.job).toMatchObject({ id: jobId, state: "accepted" });
    expect(res.jobToken).toMatch(/^bkaj_/);
    expect((await s.getAgent(a.id))?.currentJobId).toBe(jobId);
    // Not offered to another agent: it is taken.
    const other = await s.agent({ metaData: ["gpu=true"] });
    expect((await s.client.pingAgent({ agentId: other.id })).jobId).toBe("");
  });

  it("answers locked while the job waits, and refuses what it cannot take", async () => {
    const s = await setup();
    const a = await s.agent();
    const first = newId();
    const [, waiting] = await s.seed(
      [
        { id: first, state: "running" },
        { state: "waiting", dependsOn: [first] },
      ],
      {},
      false,
    );
    expect((await s.client.acquireJob({ agentId: a.id, jobId: waiting ?? "" })).locked).toBe(true);
    expect((await failure(s.client.acquireJob({ agentId: a.id, jobId: first }))).code).toBe(Code.FailedPrecondition);
    const unmatched = await s.job({ rules: ["gpu=true"] });
    expect((await failure(s.client.acquireJob({ agentId: a.id, jobId: unmatched }))).code).toBe(
      Code.FailedPrecondition,
    );
    const elsewhere = await s.place();
    const foreign = await s.job({ orgId: elsewhere.orgId, clusterId: elsewhere.clusterId });
    expect((await failure(s.client.acquireJob({ agentId: a.id, jobId: foreign }))).code).toBe(Code.NotFound);
    expect((await s.getAgent(a.id))?.currentJobId ?? "").toBe("");
  });
});

describe("metrics", () => {
  it("counts connected agents idle and busy, and the builds service's jobs, per queue and overall", async () => {
    const s = await setup();
    await s.agent();
    await s.agent();
    const busy = await s.agent();
    await s.job();
    await s.client.pingAgent({ agentId: busy.id });
    await s.register(); // never connected: not counted
    const gone = await s.agent();
    await s.client.disconnectAgent({ agentId: gone.id });
    const deploy = await s.agent({ metaData: ["queue=deploy"] });
    await s.client.stopAgent({ organizationId: s.orgId, id: deploy.id });
    await s.client.pingAgent({ agentId: deploy.id }); // stopping: still counted
    const other = await s.place();
    await s.agent({}, other.tokenId);
    // The builds service counts the busy agent's job (assigned: scheduled), and these.
    const runner = newId();
    await s.seed(
      [
        { id: runner, state: "running" },
        { state: "scheduled" },
        { state: "scheduled" },
        { state: "waiting", dependsOn: [runner] },
        { state: "waiting", dependsOn: [runner] },
        { state: "passed", exitStatus: 0 },
      ],
      {},
      false,
    );
    await s.seed([{ agentQueryRules: ["queue=gpu"] }], {}, false);
    await s.seed([{}], other, false);

    const m = await s.client.getMetrics({ organizationId: s.orgId });
    expect(m.overall).toMatchObject({
      agentsIdle: 3,
      agentsBusy: 1,
      agentsTotal: 4,
      jobsScheduled: 4,
      jobsRunning: 1,
      jobsWaiting: 2,
      jobsTotal: 7,
    });
    expect(Object.keys(m.queues).sort()).toEqual(["default", "deploy", "gpu"]);
    expect(m.queues.default).toMatchObject({
      agentsIdle: 2,
      agentsBusy: 1,
      agentsTotal: 3,
      jobsScheduled: 3,
      jobsRunning: 1,
      jobsWaiting: 2,
      jobsTotal: 6,
    });
    expect(m.queues.deploy).toMatchObject({ agentsIdle: 1, agentsBusy: 0, agentsTotal: 1, jobsTotal: 0 });
    expect(m.queues.gpu).toMatchObject({ agentsTotal: 0, jobsScheduled: 1, jobsTotal: 1 });
    expect(s.builds.callsOf("countQueueJobs")).toEqual([expect.objectContaining({ organizationId: s.orgId })]);
  });

  it("answers zeros for an organization with nothing, and refuses an organization id that is not a UUID", async () => {
    const s = await setup();
    const m = await s.client.getMetrics({ organizationId: newId() });
    expect(m.overall).toMatchObject({ agentsTotal: 0, jobsTotal: 0 });
    expect(m.queues).toEqual({});
    const bad = await failure(s.client.getMetrics({ organizationId: "acme" }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.err && fieldErrorsOf(bad.err)).toEqual([{ field: "organization_id", code: "must be a UUID" }]);
  });

  it("counts one cluster's agents and jobs when asked (a cluster's registration token)", async () => {
    const s = await setup();
    await s.agent();
    await s.job();
    const second = (await s.client.createCluster({ organizationId: s.orgId, name: "Second" })).cluster?.id ?? "";
    const { token } = await s.client.createAgentToken({ organizationId: s.orgId, clusterId: second });
    await s.agent({ metaData: ["queue=deploy"] }, token?.id);
    await s.agent({ metaData: ["queue=deploy"] }, token?.id);
    const first = newId();
    await s.seed(
      [
        { id: first, agentQueryRules: ["queue=deploy"] },
        { state: "waiting", dependsOn: [first] },
      ],
      { clusterId: second },
      false,
    );

    const all = await s.client.getMetrics({ organizationId: s.orgId });
    expect(all.overall).toMatchObject({ agentsTotal: 3, jobsScheduled: 2, jobsWaiting: 1, jobsTotal: 3 });
    const home = await s.client.getMetrics({ organizationId: s.orgId, clusterId: s.clusterId });
    expect(home.overall).toMatchObject({ agentsTotal: 1, jobsScheduled: 1, jobsTotal: 1 });
    expect(Object.keys(home.queues)).toEqual(["default"]);
    const other = await s.client.getMetrics({ organizationId: s.orgId, clusterId: second });
    expect(other.overall).toMatchObject({
      agentsIdle: 2,
      agentsTotal: 2,
      jobsScheduled: 1,
      jobsWaiting: 1,
      jobsTotal: 2,
    });
    expect(other.queues.deploy).toMatchObject({ agentsTotal: 2, jobsScheduled: 1 });
    expect(other.queues.default).toMatchObject({ agentsTotal: 0, jobsWaiting: 1 });
    const bad = await failure(s.client.getMetrics({ organizationId: s.orgId, clusterId: "nope" }));
    expect(bad.err && fieldErrorsOf(bad.err)).toEqual([{ field: "cluster_id", code: "must be a UUID" }]);
  });

  it("reuses an organization's numbers for a second", async () => {
    const s = await setup();
    await s.agent();
    const counts = jest.spyOn(s.agentsRepo, "countAgents");
    const total = async () => (await s.client.getMetrics({ organizationId: s.orgId })).overall?.agentsTotal;

    expect(await Promise.all([total(), total(), total()])).toEqual([1, 1, 1]);
    await s.agent();
    expect(await total()).toBe(1);
    expect(counts).toHaveBeenCalledTimes(1);
    expect(s.builds.callsOf("countQueueJobs")).toHaveLength(1);

    await new Promise((r) => setTimeout(r, 1_100));
    expect(await total()).toBe(2);
    expect(counts).toHaveBeenCalledTimes(2);
    expect(s.builds.callsOf("countQueueJobs")).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// REST list and get
// ---------------------------------------------------------------------------------------------------------------

describe("listing agents", () => {
  it("lists the organization's live agents only, by name", async () => {
    const s = await setup();
    await s.agent({ name: "beta" });
    await s.agent({ name: "alpha" });
    await s.register({ name: "gamma" }); // never connected, still alive
    const stopping = await s.agent({ name: "delta" });
    await s.client.stopAgent({ organizationId: s.orgId, id: stopping.id });
    await s.client.pingAgent({ agentId: stopping.id });
    const gone = await s.agent({ name: "epsilon" });
    await s.client.disconnectAgent({ agentId: gone.id });
    const lost = await s.agent({ name: "zeta" });
    await s.agentsRepo.updateAgent(lost.id, { connectionState: "lost" });
    const other = await s.place();
    await s.agent({ name: "aardvark" }, other.tokenId);

    const { agents, hasMore } = await s.client.listAgents({ organizationId: s.orgId });
    expect(agents.map((a) => a.name)).toEqual(["alpha", "beta", "delta", "gamma"]);
    expect(agents.every((a) => a.organizationId === s.orgId)).toBe(true);
    expect(hasMore).toBe(false);
  });

  it("filters by part of the name or hostname, case-insensitively, and by version prefix", async () => {
    const s = await setup();
    await s.agent({ name: "web-1", hostname: "rack1.example", version: "3.137.0" });
    await s.agent({ name: "Web-2", hostname: "rack2.example", version: "3.13.1" });
    await s.agent({ name: "db.1", hostname: "RACK1.other", version: "13.1" });
    const names = async (filter: { name?: string; hostname?: string; version?: string }) =>
      (await s.client.listAgents({ organizationId: s.orgId, ...filter })).agents.map((a) => a.name);
    expect(await names({ name: "WEB" })).toEqual(["Web-2", "web-1"]);
    expect(await names({ name: "." })).toEqual(["db.1"]);
    expect(await names({ hostname: "rack1" })).toEqual(["db.1", "web-1"]);
    expect(await names({ version: "3.13" })).toEqual(["Web-2", "web-1"]);
    expect(await names({ version: "3.137" })).toEqual(["web-1"]);
    expect(await names({ name: "web", hostname: "rack2" })).toEqual(["Web-2"]);
  });

  it("pages with has_more", async () => {
    const s = await setup();
    for (const name of ["a", "b", "c", "d", "e"]) await s.agent({ name });
    const page = async (p: number, perPage: number) => {
      const res = await s.client.listAgents({ organizationId: s.orgId, page: p, perPage });
      return [res.agents.map((a) => a.name).join(""), res.hasMore];
    };
    expect(await page(1, 2)).toEqual(["ab", true]);
    expect(await page(2, 2)).toEqual(["cd", true]);
    expect(await page(3, 2)).toEqual(["e", false]);
    expect(await page(4, 2)).toEqual(["", false]);
    expect(await page(1, 5)).toEqual(["abcde", false]);
    expect(await page(1, 4)).toEqual(["abcd", true]);
    expect(await page(0, 0)).toEqual(["abcde", false]);
  });

  it("refuses an organization id that is not a UUID and over-long filters", async () => {
    const s = await setup();
    const bad = async (req: { organizationId: string; name?: string; hostname?: string; version?: string }) => {
      const { code, err } = await failure(s.client.listAgents(req));
      expect(code).toBe(Code.InvalidArgument);
      return err ? fieldErrorsOf(err) : [];
    };
    expect(await bad({ organizationId: "acme" })).toEqual([{ field: "organization_id", code: "must be a UUID" }]);
    expect(await bad({ organizationId: s.orgId, hostname: "h".repeat(256) })).toEqual([
      { field: "hostname", code: "is too long (maximum is 255 characters)" },
    ]);
    expect((await s.client.listAgents({ organizationId: s.orgId, name: "n".repeat(255) })).agents).toEqual([]);
  });

  it("gets an agent of the organization and nothing of another", async () => {
    const s = await setup();
    const other = await s.place();
    const a = await s.agent({ name: "mine" });
    expect((await s.client.getAgent({ organizationId: s.orgId, id: a.id })).agent).toMatchObject({
      id: a.id,
      name: "mine",
      connectionState: "connected",
    });
    for (const req of [
      { organizationId: other.orgId, id: a.id },
      { organizationId: s.orgId, id: newId() },
      { organizationId: s.orgId, id: "not-a-uuid" },
    ]) {
      expect((await failure(s.client.getAgent(req))).code).toBe(Code.NotFound);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Clusters and registration tokens
// ---------------------------------------------------------------------------------------------------------------

describe("clusters and registration tokens", () => {
  it("keeps cluster names unique in an organization and tokens to the organization's clusters", async () => {
    const s = await setup();
    expect((await failure(s.client.createCluster({ organizationId: s.orgId, name: " Default " }))).code).toBe(
      Code.AlreadyExists,
    );
    const other = await s.place();
    // Another organization may use the name, but not this organization's cluster.
    expect(
      (await failure(s.client.createAgentToken({ organizationId: other.orgId, clusterId: s.clusterId }))).code,
    ).toBe(Code.InvalidArgument);
    expect((await failure(s.client.createCluster({ organizationId: s.orgId, name: "  " }))).code).toBe(
      Code.InvalidArgument,
    );
  });

  it("lists tokens newest first, by cluster when asked, revoked ones included", async () => {
    const s = await setup();
    const { cluster } = await s.client.createCluster({ organizationId: s.orgId, name: "Second" });
    s.clock.advance(1_000);
    const second = (await s.client.createAgentToken({ organizationId: s.orgId, clusterId: cluster?.id ?? "" })).token;
    s.clock.advance(1_000);
    const bare = (await s.client.createAgentToken({ organizationId: s.orgId, description: "bare" })).token;
    await s.client.revokeAgentToken({ organizationId: s.orgId, id: s.tokenId });
    const ids = async (clusterId = "") =>
      (await s.client.listAgentTokens({ organizationId: s.orgId, clusterId })).tokens.map((t) => t.id);
    expect(await ids()).toEqual([bare?.id, second?.id, s.tokenId]);
    expect(await ids(cluster?.id)).toEqual([second?.id]);
    expect((await failure(s.client.revokeAgentToken({ organizationId: newId(), id: s.tokenId }))).code).toBe(
      Code.NotFound,
    );
  });
});
