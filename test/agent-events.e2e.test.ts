import { AgentChangedSchema, JobDispatchedSchema } from "@conveyor/proto/agents";
import { Role } from "@conveyor/proto/identity";
import { decodeEvent } from "@conveyor/runtime";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, unique } from "./support/stack-env.js";

// An agent's life as NATS announces it (connected, job dispatched, lost, disconnected), and what happens when an
// agent dies mid-job: it is marked lost, stops counting, and its job ends failed with exit status -1. The test stack
// runs with a 6 s lost window (test/setup/global-setup.ts).

jest.setTimeout(120_000);

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connect({ servers: process.env.NATS_URL ?? "" });
});
afterAll(async () => {
  await stopAllAgents();
  await nc.close();
});

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

describe("agent events and lost agents", () => {
  it("announces the agent's life, and fails the job of an agent killed mid-job", async () => {
    const org = await arrangeOrgUser({
      scopes: ["read_builds", "write_builds", "write_pipelines", "read_agents"],
      role: Role.ADMIN,
    });
    const clusterId = await arrangeCluster(org.organization.id);
    const { secret } = await agents.createAgentToken({ organizationId: org.organization.id, clusterId });
    const seen: Array<{ subject: string; agent: string; state?: string }> = [];
    const sub = nc.subscribe("ci.agents.>");
    void (async () => {
      for await (const msg of sub) {
        if (msg.subject === "ci.agents.job_dispatched") {
          const e = decodeEvent(JobDispatchedSchema, msg.data);
          if (e.organizationId === org.organization.id) seen.push({ subject: msg.subject, agent: e.agentId });
        } else if (msg.subject !== "ci.agents.agent_changed" && msg.subject !== "ci.agents.credential_revoked") {
          const e = decodeEvent(AgentChangedSchema, msg.data);
          if (e.agent?.organizationId === org.organization.id)
            seen.push({ subject: msg.subject, agent: e.agent.id, state: e.agent.connectionState });
        }
      }
    })();
    await nc.flush();

    const base = `/v2/organizations/${org.organization.slug}`;
    const pipeline = await send("POST", `${base}/pipelines`, org.secret, {
      name: unique("Lost"),
      repository: localRepository(),
      cluster_id: clusterId,
      configuration: "steps:\n  - label: long\n    command: sleep 30\n",
    });
    const doomed = startAgent({ token: secret });
    const build = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, org.secret, {
      commit: "HEAD",
      branch: "main",
    });
    const path = `${base}/pipelines/${pipeline.body.slug}/builds/${build.body.number}`;
    const running = await eventually("the job to run", async () => {
      const b = (await send("GET", path, org.secret)).body as Json;
      return b.jobs[0].state === "running" ? b : undefined;
    });
    const agentId = running.jobs[0].agent.id;
    doomed.kill("SIGKILL");

    const failed = await eventually(
      "the job of the lost agent to fail",
      async () => {
        const b = (await send("GET", path, org.secret)).body as Json;
        return b.finished_at ? b : undefined;
      },
      60_000,
    );
    expect(failed.state).toBe("failed");
    expect(failed.jobs[0]).toMatchObject({ state: "failed", exit_status: -1, signal_reason: "agent_lost" });
    const agent = (await send("GET", `${base}/agents/${agentId}`, org.secret)).body as Json;
    expect(agent.connection_state).toBe("lost");
    expect((await send("GET", `${base}/agents`, org.secret)).body).toEqual([]);

    // A second agent connects and is stopped: disconnected is announced too.
    const survivor = startAgent({ token: secret });
    const survivorId = await eventually("the second agent to connect", async () => {
      const list = (await send("GET", `${base}/agents`, org.secret)).body as Json[];
      return list.find((a) => a.name === survivor.name)?.id as string | undefined;
    });
    await survivor.stop();
    await eventually("the disconnection to be announced", async () =>
      seen.some((e) => e.subject === "ci.agents.agent_disconnected" && e.agent === survivorId) ? true : undefined,
    ).catch(async (err) => {
      // Say what was seen instead: the agent's own account of its stop, its record, and its announcements.
      const record = (await send("GET", `${base}/agents/${survivorId}`, org.secret)).body as Json;
      const events = seen.filter((e) => e.agent === survivorId).map((e) => `${e.subject} ${e.state ?? ""}`);
      throw new Error(
        `${String(err)}\nstate: ${record.connection_state}; events: ${events.join(", ")}\n` +
          `agent log (last 30 lines):\n${survivor.log().split("\n").slice(-30).join("\n")}`,
      );
    });
    sub.unsubscribe();
    const forDoomed = seen.filter((e) => e.agent === agentId).map((e) => e.subject);
    expect(forDoomed).toEqual(["ci.agents.agent_connected", "ci.agents.job_dispatched", "ci.agents.agent_lost"]);
  });
});
