import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// A cluster's queues (issue 35 item 1): go-buildkite v4's ClusterQueues calls decoded against the stack
// (test/go-client/cluster-queues-check), and pausing a queue's dispatch really stopping it: the real buildkite-agent
// of that queue keeps polling and is offered nothing, its job stays scheduled, and it takes the job right after the
// queue is resumed. An agent naming a queue its cluster does not have is refused at registration; /v3/token names the
// queue object an agent is in. A job names its queue object from the moment it is made (scheduled, before any agent
// takes it), and a cluster that pipelines still name is not deleted.

jest.setTimeout(180_000);

const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "cluster-queues-check");
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_agents",
  "read_clusters",
  "write_clusters",
];

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let base: string;

beforeAll(async () => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "./cluster-queues-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  base = `/v2/organizations/${org.organization.slug}`;
}, 300_000);
afterAll(stopAllAgents);

describe("go-buildkite's ClusterQueues against the stack", () => {
  it("creates, lists, gets, updates, pauses, resumes and deletes a queue; a cluster with a queue or a pipeline is not deleted", async () => {
    const cluster = await arrangeCluster(org.organization.id);
    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CHECK_CLUSTER: cluster,
        },
        encoding: "utf8",
      }),
    );
    const url = `${stack.apiUrl}${base}/clusters/${cluster}`;
    expect(out.created).toMatchObject({
      key: "go-linux",
      description: "from go",
      url: `${url}/queues/${out.created.id}`,
      cluster_url: url,
      dispatch_paused: false,
      created_by: { id: org.user.id, name: org.user.name },
    });
    expect(out.created.created_at).toMatch(ISO);
    expect(out.listed.map((q: { key: string }) => q.key)).toEqual(["go-linux"]);
    expect(out.got.id).toBe(out.created.id);
    expect(out.updated).toMatchObject({ key: "go-linux", description: "changed by go" });
    expect(out.paused).toMatchObject({
      dispatch_paused: true,
      dispatch_paused_note: "maintenance",
      dispatch_paused_by: { id: org.user.id },
    });
    expect(out.paused.dispatch_paused_at).toMatch(ISO);
    expect(out.resume_status).toBe(200);
    expect(out.after_resume.dispatch_paused).toBe(false);
    expect(out.after_resume.dispatch_paused_at).toBeUndefined();
    expect(out.duplicate.status).toBe(422);
    // The build's job waits for an agent of the queue (none is connected) and names the queue already.
    expect(out.scheduled_job).toMatchObject({ state: "scheduled", cluster_queue_id: out.created.id });
    expect(out.cluster_refused).toEqual({ status: 422, message: "The cluster has 1 queue: delete them first" });
    expect(out.delete_status).toBe(204);
    expect(out.after_delete).toEqual({ status: 404, message: "No queue found" });
    expect(out.pipeline_refused.status).toBe(422);
    expect(out.pipeline_refused.message).toMatch(/^The cluster has 1 pipeline \(go-queue-[a-z0-9-]+\): move it to/);
    expect(out.pipeline_deleted_status).toBe(204);
    expect(out.cluster_deleted_status).toBe(204);
    expect((await send("GET", `${base}/clusters/${cluster}`, org.secret)).status).toBe(404);
  });
});

describe("a paused queue with the real agent", () => {
  it("offers its job to none of its polling agents, and to one right after it is resumed", async () => {
    const cluster = await arrangeCluster(org.organization.id);
    const queue = await send("POST", `${base}/clusters/${cluster}/queues`, org.secret, { key: "paused-q" });
    expect(queue.status).toBe(201);
    const queuePath = `${base}/clusters/${cluster}/queues/${queue.body.id}`;
    const { secret } = await agents.createAgentToken({
      organizationId: org.organization.id,
      clusterId: cluster,
      description: "queues e2e",
    });

    // An agent naming a queue the cluster does not have is refused at registration, naming it.
    const refused = await fetch(`${stack.agentUrl}/register`, {
      method: "POST",
      headers: { authorization: `Token ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ name: unique("stray"), meta_data: ["queue=nope"] }),
    });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(await refused.json())).toContain('names queue \\"nope\\"');

    // /v3/token names the queue object an agent of the queue is in.
    const registered = await fetch(`${stack.agentUrl}/register`, {
      method: "POST",
      headers: { authorization: `Token ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ name: unique("token-reader"), meta_data: ["queue=paused-q"] }),
    });
    expect(registered.status).toBe(200);
    const { access_token } = (await registered.json()) as { access_token: string };
    const tokenInfo = await fetch(`${stack.agentUrl}/token`, { headers: { authorization: `Token ${access_token}` } });
    expect(await tokenInfo.json()).toMatchObject({
      cluster_uuid: cluster,
      organization_queue_uuid: queue.body.id,
      organization_queue_key: "paused-q",
    });

    const paused = await send("POST", `${queuePath}/pause_dispatch`, org.secret, { dispatch_paused_note: "e2e" });
    expect(paused.body.dispatch_paused).toBe(true);
    const agent = startAgent({ token: secret, tags: ["queue=paused-q"] });
    await eventually("the agent to connect", async () => {
      const listed = await send("GET", `${base}/agents?name=${agent.name}`, org.secret);
      return listed.body.find((a: { connection_state: string }) => a.connection_state === "connected");
    });

    const pipeline = await send("POST", `${base}/pipelines`, org.secret, {
      name: unique("Paused queue"),
      repository: localRepository(),
      cluster_id: cluster,
      configuration: "steps:\n  - command: echo from the paused queue\n    agents:\n      queue: paused-q\n",
    });
    expect(pipeline.status).toBe(201);
    const build = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, org.secret, {
      commit: "HEAD",
      branch: "main",
    });
    expect(build.status).toBe(201);
    const buildPath = `${base}/pipelines/${pipeline.body.slug}/builds/${build.body.number}`;
    const jobState = async () => (await send("GET", buildPath, org.secret)).body.jobs[0].state as string;
    await eventually("the job to be scheduled", async () => ((await jobState()) === "scheduled" ? true : undefined));
    // Waiting for an agent, the job names its queue already (Buildkite fills it when the job is made).
    const waiting = (await send("GET", buildPath, org.secret)).body.jobs[0];
    expect(waiting).toMatchObject({ state: "scheduled", agent: null, cluster_queue_id: queue.body.id });
    expect(waiting.cluster_queue_url).toBe(`${stack.apiUrl}${base}/clusters/${cluster}/queues/${queue.body.id}`);

    // The agent pings every second (AGENT_PING_INTERVAL_S): eight pings, none offered the job.
    await sleep(8_000);
    expect(await jobState()).toBe("scheduled");
    const still = await send("GET", `${base}/agents?name=${agent.name}`, org.secret);
    expect(still.body[0]).toMatchObject({ connection_state: "connected", job: null });

    const resumedAt = Date.now();
    const resumed = await send("POST", `${queuePath}/resume_dispatch`, org.secret);
    expect(resumed.body.dispatch_paused).toBe(false);
    await eventually(
      "the job to pass after the resume",
      async () => ((await jobState()) === "passed" ? true : undefined),
      60_000,
    );
    // Taken at its next ping, not at a refresh minutes later.
    const job = (await send("GET", buildPath, org.secret)).body.jobs[0];
    expect(job.agent.name).toBe(agent.name);
    expect(new Date(job.started_at).getTime() - resumedAt).toBeLessThan(15_000);
    // The job names the queue object it was dispatched through.
    expect(job.cluster_queue_id).toBe(queue.body.id);
    expect(job.cluster_queue_url).toMatch(new RegExp(`/clusters/${cluster}/queues/${queue.body.id}$`));
  });
});
