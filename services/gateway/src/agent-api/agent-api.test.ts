import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type AuthenticateAgentCredentialResponse,
  CredentialKind,
  type FinishJobRequest,
  type GetMetricsRequest,
  type RegisterAgentRequest,
} from "@conveyor/proto/agents";
import {
  type AppendJobLogRequest,
  JobEventType,
  JobSchema,
  type SetBuildMetaDataRequest,
  type TransitionJobRequest,
} from "@conveyor/proto/builds";
import type { FastifyInstance } from "fastify";
import { buildTestApp, type FakeServices, type FakeWorld, makeOrg } from "../testing/test-app.js";
import { STREAM_PINGS_PATH } from "./agent-api.js";

const acme = makeOrg("acme", "Acme");
const JOB = "44444444-0000-4000-8000-000000000001";
const OTHER_JOB = "44444444-0000-4000-8000-000000000002";
const BUILD = "55555555-0000-4000-8000-000000000001";
const AGENT = "66666666-0000-4000-8000-000000000001";
const OTHER_AGENT = "66666666-0000-4000-8000-000000000002";

const credentials: Record<string, Omit<AuthenticateAgentCredentialResponse, "$typeName" | "$unknown">> = {
  bkat_reg: {
    kind: CredentialKind.REGISTRATION,
    organizationId: acme.id,
    clusterId: "c1",
    tokenId: "t1",
    agentId: "",
    jobId: "",
    buildId: "",
  },
  bkaa_agent: {
    kind: CredentialKind.AGENT,
    organizationId: acme.id,
    clusterId: "c1",
    tokenId: "t1",
    agentId: AGENT,
    jobId: "",
    buildId: "",
  },
  bkaa_other: {
    kind: CredentialKind.AGENT,
    organizationId: makeOrg("globex", "Globex").id,
    clusterId: "c2",
    tokenId: "t2",
    agentId: OTHER_AGENT,
    jobId: "",
    buildId: "",
  },
  bkaj_job: {
    kind: CredentialKind.JOB,
    organizationId: acme.id,
    clusterId: "c1",
    tokenId: "",
    agentId: AGENT,
    jobId: JOB,
    buildId: BUILD,
  },
};

const job = create(JobSchema, {
  id: JOB,
  buildId: BUILD,
  buildNumber: 7,
  state: "accepted",
  priority: 3,
  queue: "deploy.eu",
  runnableAt: timestampFromDate(new Date("2026-03-01T10:00:00.123Z")),
  agent: { id: AGENT, name: "box-1" },
});

function world(): FakeWorld {
  return { orgs: [acme], users: [], tokens: new Map(), revoked: [] };
}

/** Fakes recording what the gateway asked of the agents and builds services. */
function fakes() {
  const calls = {
    register: [] as RegisterAgentRequest[],
    transitions: [] as TransitionJobRequest[],
    chunks: [] as AppendJobLogRequest[],
    finishes: [] as FinishJobRequest[],
    metaSets: [] as SetBuildMetaDataRequest[],
    metrics: [] as GetMetricsRequest[],
    authentications: 0,
  };
  const metaData = new Map<string, string>([["greeting", "hello"]]);
  const services: FakeServices = {
    agents: {
      authenticateAgentCredential(req) {
        calls.authentications++;
        const found = credentials[req.secret];
        if (!found) throw new ConnectError("nope", Code.Unauthenticated);
        return found;
      },
      registerAgent(req) {
        calls.register.push(req);
        return {
          agent: { id: AGENT, name: req.name || "picked-name", metaData: req.metaData },
          accessToken: "bkaa_new",
          pingInterval: 2,
          heartbeatInterval: 10,
          jobStatusInterval: 1,
        };
      },
      connectAgent: () => ({}),
      disconnectAgent: () => ({}),
      heartbeatAgent: () => ({ receivedAt: timestampFromDate(new Date("2026-03-01T10:00:01.000Z")) }),
      pingAgent: () => ({ action: "idle", jobId: JOB, message: "" }),
      acceptJob: (req) => {
        // As the builds service answers: an unknown job and another agent's are not found alike.
        if (req.jobId !== JOB || req.agentId !== AGENT) throw new ConnectError("No job found", Code.NotFound);
        return {
          job: { ...job, id: req.jobId },
          env: { BUILDKITE_JOB_ID: req.jobId, BUILDKITE_ORGANIZATION_SLUG: "acme", BUILDKITE_PIPELINE_SLUG: "web" },
          jobToken: "bkaj_job",
        };
      },
      finishJob(req) {
        calls.finishes.push(req);
        return {};
      },
      getMetrics: (req) => {
        calls.metrics.push(req);
        return {
          overall: {
            agentsIdle: 1,
            agentsBusy: 1,
            agentsTotal: 2,
            jobsScheduled: 3,
            jobsRunning: 1,
            jobsWaiting: 2,
            jobsTotal: 6,
          },
          queues: {
            default: {
              agentsIdle: 1,
              agentsBusy: 1,
              agentsTotal: 2,
              jobsScheduled: 1,
              jobsRunning: 1,
              jobsWaiting: 2,
              jobsTotal: 4,
            },
            "deploy.eu": { jobsScheduled: 2, jobsTotal: 2 },
          },
        };
      },
      getAgent: () => ({ agent: { id: AGENT, currentJobId: JOB, queue: "gpu" } }),
      getCluster: () => ({ cluster: { id: "c1", name: "Default" } }),
      listClusterQueues: () => ({ queues: [{ id: "q-deploy", clusterId: "c1", key: "deploy.eu" }] }),
    },
    builds: {
      getJob(req) {
        if (req.jobId !== JOB) throw new ConnectError("No job found", Code.NotFound);
        return { job };
      },
      transitionJob(req) {
        calls.transitions.push(req);
        return {};
      },
      appendJobLog(req) {
        calls.chunks.push(req);
        return {};
      },
      setBuildMetaData(req) {
        calls.metaSets.push(req);
        for (const item of req.items) metaData.set(item.key, item.value);
        return {};
      },
      getBuildMetaData: (req) => ({ exists: metaData.has(req.key), value: metaData.get(req.key) ?? "" }),
      listBuildMetaDataKeys: () => ({ keys: [...metaData.keys()] }),
      updateJob: () => ({ job }),
    },
  };
  return { calls, services };
}

let app: FastifyInstance;
let calls: ReturnType<typeof fakes>["calls"];
let agentCredentials: Awaited<ReturnType<typeof buildTestApp>>["agentCredentials"];
beforeEach(async () => {
  const f = fakes();
  calls = f.calls;
  ({ app, agentCredentials } = await buildTestApp(world(), f.services));
});
afterEach(() => app.close());

const token = (secret: string) => ({ authorization: `Token ${secret}` });

describe("agent API authentication", () => {
  it("needs a Token credential of a kind the route accepts", async () => {
    expect((await app.inject({ method: "GET", url: "/v3/ping" })).statusCode).toBe(401);
    expect(
      (await app.inject({ method: "GET", url: "/v3/ping", headers: { authorization: "Bearer bkaa_agent" } }))
        .statusCode,
    ).toBe(401);
    expect((await app.inject({ method: "GET", url: "/v3/ping", headers: token("bkaa_unknown") })).statusCode).toBe(401);
    // A registration token registers; it does not ping. A job token does not register.
    expect((await app.inject({ method: "GET", url: "/v3/ping", headers: token("bkat_reg") })).statusCode).toBe(401);
    const register = await app.inject({ method: "POST", url: "/v3/register", headers: token("bkaj_job"), payload: {} });
    expect(register.statusCode).toBe(401);
    expect(register.json()).toEqual({ message: expect.stringContaining("Token") });
  });

  it("asks the agents service once per credential, and again once the credential is revoked", async () => {
    for (let i = 0; i < 3; i++) await app.inject({ method: "GET", url: "/v3/ping", headers: token("bkaa_agent") });
    expect(calls.authentications).toBe(1);
    agentCredentials.revoke({ agentId: AGENT });
    await app.inject({ method: "GET", url: "/v3/ping", headers: token("bkaa_agent") });
    expect(calls.authentications).toBe(2);
  });

  it("answers the agent's streaming pings 404 before reading a body, so it falls back to polling", async () => {
    const res = await app.inject({
      method: "POST",
      url: STREAM_PINGS_PATH,
      headers: { "content-type": "application/connect+proto" },
      payload: Buffer.from([0, 0, 0, 0, 0]),
    });
    expect(res.statusCode).toBe(404);
  });
});

describe("the agent's own routes", () => {
  it("registers with the token's id, the agent's user agent and tags, and positive integer intervals", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/v3/register",
      headers: { ...token("bkat_reg"), "user-agent": "buildkite-agent/3.137.0.x (linux; amd64)" },
      payload: {
        name: "",
        hostname: "box",
        os: 'PRETTY_NAME="Debian"\nID=debian\n'.repeat(20),
        meta_data: ["queue=default"],
        priority: null,
      },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: AGENT,
      name: "picked-name",
      access_token: "bkaa_new",
      endpoint: "",
      request_headers: {},
      ping_interval: 2,
      job_status_interval: 1,
      heartbeat_interval: 10,
      meta_data: ["queue=default"],
    });
    expect(calls.register[0]).toMatchObject({
      tokenId: "t1",
      hostname: "box",
      userAgent: expect.stringContaining("buildkite-agent/"),
    });
    const tooMany = await app.inject({
      method: "POST",
      url: "/v3/register",
      headers: token("bkat_reg"),
      payload: { meta_data: Array.from({ length: 101 }, (_, i) => `t${i}=1`) },
    });
    expect(tooMany.statusCode).toBe(422);
  });

  it("pings with the job to take, and heartbeats with JSON", async () => {
    const ping = await app.inject({ method: "GET", url: "/v3/ping", headers: token("bkaa_agent") });
    expect(ping.json()).toEqual({ action: "idle", job: { id: JOB } });
    const beat = await app.inject({
      method: "POST",
      url: "/v3/heartbeat",
      headers: token("bkaa_agent"),
      payload: { sent_at: "2026-03-01T10:00:00.999999Z" },
    });
    expect(beat.json()).toEqual({ sent_at: "2026-03-01T10:00:00.999999Z", received_at: "2026-03-01T10:00:01.000Z" });
    for (const url of ["/v3/connect", "/v3/disconnect"]) {
      const res = await app.inject({ method: "POST", url, headers: token("bkaa_agent") });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({});
    }
  });

  it("reports metrics with integer counts, queue keys as they are, and the organization's slug", async () => {
    const res = await app.inject({ method: "GET", url: "/v3/metrics", headers: token("bkat_reg") });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      agents: {
        idle: 1,
        busy: 1,
        total: 2,
        queues: { default: { idle: 1, busy: 1, total: 2 }, "deploy.eu": { idle: 0, busy: 0, total: 0 } },
      },
      jobs: {
        scheduled: 3,
        running: 1,
        waiting: 2,
        total: 6,
        queues: {
          default: { scheduled: 1, running: 1, waiting: 2, total: 4 },
          "deploy.eu": { scheduled: 2, running: 0, waiting: 0, total: 2 },
        },
      },
      organization: { slug: "acme" },
      cluster: { name: "Default" },
    });
    expect(res.headers["buildkite-agent-metrics-poll-duration"]).toBe("5");
    expect(calls.metrics).toEqual([expect.objectContaining({ organizationId: acme.id, clusterId: "c1" })]);
    expect((await app.inject({ method: "GET", url: "/v3/metrics", headers: token("bkaa_agent") })).statusCode).toBe(
      401,
    );
  });

  it("reports one queue's metrics in the shape of the whole without queues, as buildkite-agent-metrics -queue reads", async () => {
    const res = await app.inject({
      method: "GET",
      url: "/v3/metrics/queue?name=deploy.eu",
      headers: token("bkat_reg"),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["buildkite-agent-metrics-poll-duration"]).toBe("5");
    expect(res.json()).toEqual({
      agents: { idle: 0, busy: 0, total: 0 },
      jobs: { scheduled: 2, running: 0, waiting: 0, total: 2 },
      organization: { slug: "acme" },
      cluster: { name: "Default" },
    });
    const unknown = await app.inject({
      method: "GET",
      url: "/v3/metrics/queue?name=nowhere",
      headers: token("bkat_reg"),
    });
    expect(unknown.json()).toMatchObject({ agents: { total: 0 }, jobs: { total: 0 } });
    const nameless = await app.inject({ method: "GET", url: "/v3/metrics/queue", headers: token("bkat_reg") });
    expect(nameless.statusCode).toBe(400);
    for (const secret of ["bkaa_agent", "bkaj_job"]) {
      const refused = await app.inject({
        method: "GET",
        url: "/v3/metrics/queue?name=default",
        headers: token(secret),
      });
      expect(refused.statusCode).toBe(401);
    }
  });

  it("describes the credential at GET token, with the queue an agent or job works in", async () => {
    const res = await app.inject({ method: "GET", url: "/v3/token", headers: token("bkaj_job") });
    expect(res.json()).toMatchObject({
      token_type: "job",
      organization_slug: "acme",
      cluster_uuid: "c1",
      cluster_name: "Default",
      organization_queue_uuid: "q-deploy",
      organization_queue_key: "deploy.eu",
    });
    // A queue key the cluster has no queue object of: no uuid.
    const agent = await app.inject({ method: "GET", url: "/v3/token", headers: token("bkaa_agent") });
    expect(agent.json()).toMatchObject({
      token_type: "agent",
      organization_queue_uuid: "",
      organization_queue_key: "gpu",
    });
    const registration = await app.inject({ method: "GET", url: "/v3/token", headers: token("bkat_reg") });
    expect(registration.json()).toMatchObject({ token_type: "registration", organization_queue_key: "" });
  });
});

describe("job routes", () => {
  it("accepts a job into the agent's job object: string env, a positive chunk size, a job token, no exit status", async () => {
    const res = await app.inject({ method: "PUT", url: `/v3/jobs/${JOB}/accept`, headers: token("bkaa_agent") });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      id: JOB,
      state: "accepted",
      token: "bkaj_job",
      priority: 3,
      runnable_at: "2026-03-01T10:00:00.123Z",
    });
    expect(body.chunks_max_size_bytes).toBe(102_400);
    expect(body.log_max_size_bytes).toBe(1024 * 1024);
    expect(body).not.toHaveProperty("exit_status");
    for (const value of Object.values(body.env)) expect(typeof value).toBe("string");
    expect(body.env.BUILDKITE_BUILD_URL).toBe("http://web.test/acme/web/builds/7");
    expect(
      (await app.inject({ method: "PUT", url: `/v3/jobs/${JOB}/accept`, headers: token("bkaj_job") })).statusCode,
    ).toBe(401);
  });

  it("answers an agent accepting a job not offered to it as for a job that does not exist (no existence oracle)", async () => {
    const theirs = await app.inject({ method: "PUT", url: `/v3/jobs/${JOB}/accept`, headers: token("bkaa_other") });
    const unknown = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${OTHER_JOB}/accept`,
      headers: token("bkaa_other"),
    });
    expect([theirs.statusCode, theirs.json()]).toEqual([404, { message: "No job found" }]);
    expect([unknown.statusCode, unknown.json()]).toEqual([404, { message: "No job found" }]);
  });

  it("lets a job token act on its own job only", async () => {
    const own = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${JOB}/start`,
      headers: token("bkaj_job"),
      payload: { started_at: "2026-03-01T10:00:02.5Z" },
    });
    expect(own.statusCode).toBe(200);
    expect(calls.transitions[0]).toMatchObject({ jobId: JOB, event: JobEventType.START, agentId: AGENT });
    expect(calls.transitions[0]?.at).toEqual(timestampFromDate(new Date("2026-03-01T10:00:02.500Z")));
    const other = await app.inject({ method: "PUT", url: `/v3/jobs/${OTHER_JOB}/start`, headers: token("bkaj_job") });
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ message: "No job found" });
    const state = await app.inject({ method: "GET", url: `/v3/jobs/${OTHER_JOB}`, headers: token("bkaj_job") });
    expect(state.statusCode).toBe(404);
  });

  it("lets the agent's access token act on the job its agent holds, percent-decoding the path", async () => {
    const encoded = JOB.replace(/-/g, "%2D");
    const res = await app.inject({ method: "GET", url: `/v3/jobs/${encoded}`, headers: token("bkaa_agent") });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: JOB, state: "accepted" });
    expect(
      (await app.inject({ method: "GET", url: `/v3/jobs/${OTHER_JOB}`, headers: token("bkaa_agent") })).statusCode,
    ).toBe(404);
  });

  it("takes log chunks as raw gzip bytes with their sequence, offset and size", async () => {
    const gzip = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    const res = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/chunks?sequence=2&offset=1024&size=10`,
      headers: { ...token("bkaj_job"), "content-type": "text/plain", "content-encoding": "gzip" },
      payload: gzip,
    });
    expect(res.statusCode).toBe(201);
    expect(calls.chunks[0]).toMatchObject({ jobId: JOB, sequence: 2, offset: 1024n, size: 10 });
    expect(Buffer.from(calls.chunks[0]?.data ?? [])).toEqual(gzip);
    const noOffset = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/chunks?sequence=2&size=10`,
      headers: { ...token("bkaj_job"), "content-type": "text/plain" },
      payload: gzip,
    });
    expect(noOffset.statusCode).toBe(400);
  });

  it("finishes with the exit status the agent sends as a string, and refuses one that is no integer", async () => {
    const ok = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${JOB}/finish`,
      headers: token("bkaj_job"),
      payload: {
        exit_status: "-1",
        signal: "SIGTERM",
        signal_reason: "cancel",
        finished_at: "2026-03-01T10:01:00Z",
        chunks_failed_count: 0,
      },
    });
    expect(ok.statusCode).toBe(200);
    expect(calls.finishes[0]).toMatchObject({
      jobId: JOB,
      agentId: AGENT,
      exitStatus: -1,
      signal: "SIGTERM",
      signalReason: "cancel",
    });
    for (const bad of ["abc", "1.5", "", "99999999999"]) {
      const res = await app.inject({
        method: "PUT",
        url: `/v3/jobs/${JOB}/finish`,
        headers: token("bkaj_job"),
        payload: { exit_status: bad },
      });
      expect(res.statusCode).toBe(422);
    }
  });

  it("updates the job's timeout and nothing else", async () => {
    const ok = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${JOB}`,
      headers: token("bkaj_job"),
      payload: { timeout: "20" },
    });
    expect(ok.json()).toEqual({ id: JOB });
    const bad = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${JOB}`,
      headers: token("bkaj_job"),
      payload: { command: "rm -rf /" },
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors).toEqual([{ field: "command", code: expect.stringContaining("can't be updated") }]);
  });
});

describe("meta-data routes", () => {
  it("sets through the job's build, gets (404 when missing), tells existence and lists keys", async () => {
    const set = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/data/set`,
      headers: token("bkaj_job"),
      payload: { key: "release.version", value: "1.2" },
    });
    expect(set.statusCode).toBe(200);
    expect(calls.metaSets[0]).toMatchObject({ buildId: BUILD, items: [{ key: "release.version", value: "1.2" }] });
    const got = await app.inject({
      method: "POST",
      url: `/v3/builds/${BUILD}/data/get`,
      headers: token("bkaj_job"),
      payload: { key: "release.version" },
    });
    expect(got.json()).toEqual({ key: "release.version", value: "1.2" });
    const missing = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/data/get`,
      headers: token("bkaj_job"),
      payload: { key: "nope" },
    });
    expect(missing.statusCode).toBe(404);
    const exists = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/data/exists`,
      headers: token("bkaj_job"),
      payload: { key: "nope" },
    });
    expect(exists.json()).toEqual({ exists: false });
    const keys = await app.inject({ method: "POST", url: `/v3/jobs/${JOB}/data/keys`, headers: token("bkaj_job") });
    expect(keys.json()).toEqual(["greeting", "release.version"]);
  });

  it("keeps a job token to its own build, and checks batches", async () => {
    const other = await app.inject({
      method: "POST",
      url: "/v3/builds/55555555-0000-4000-8000-000000000009/data/keys",
      headers: token("bkaj_job"),
    });
    expect(other.statusCode).toBe(404);
    const empty = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/data/set-batch`,
      headers: token("bkaj_job"),
      payload: { items: [] },
    });
    expect(empty.statusCode).toBe(422);
    const batch = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/data/set-batch`,
      headers: token("bkaj_job"),
      payload: {
        items: [
          { key: "a", value: "1" },
          { key: "b", value: "2" },
        ],
      },
    });
    expect(batch.statusCode).toBe(200);
    expect(calls.metaSets.at(-1)?.items.map((i) => i.key)).toEqual(["a", "b"]);
  });
});
