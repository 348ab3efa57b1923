import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { type ClientHttp2Session, connect, constants } from "node:http2";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Agent, AgentSchema, CredentialKind } from "@conveyor/proto/agents";
import { createLogger, agentStreamWire as wire } from "@conveyor/runtime";
import Fastify from "fastify";
import type { AgentCredentialCache } from "../agent-api/agent-credentials.js";
import { DEFAULT_CLIENT_LIMITS } from "../app/client-limits.js";
import { createTlsServer, listenTls } from "../app/tls-server.js";
import { type AgentStreams, createAgentStreams } from "./agent-streams.js";
import { registerStreamPings, STREAM_PINGS_PATH } from "./stream-route.js";

/** The agents service as the streams see it: one agent whose state the tests set, and what it was asked. */
function fakeServices() {
  const state = {
    agent: create(AgentSchema, { id: "agent-1", organizationId: "org", connectionState: "connected" }),
    ping: { action: "idle", message: "", jobId: "", heldJobId: "" } as {
      action: string;
      message: string;
      jobId: string;
      heldJobId?: string;
    },
    jobState: "assigned",
    pings: 0,
    /** Whether every ping was asked on the stream's behalf (for_stream). */
    forStream: true,
  };
  return {
    state,
    agents: {
      async pingAgent(req: { forStream?: boolean }) {
        state.pings++;
        if (!req.forStream) state.forStream = false;
        return { ...state.ping, $typeName: "ci.agents.v1.PingAgentResponse" } as never;
      },
      async getAgent() {
        return { agent: state.agent } as never;
      },
    },
    builds: {
      async getJob({ jobId }: { jobId: string }) {
        return { job: { id: jobId, state: state.jobState, agent: { id: state.agent.id } } } as never;
      },
    },
  };
}

const credentials = {
  async get(secret: string) {
    if (secret === "agent-secret")
      return { kind: CredentialKind.AGENT, agentId: "agent-1", organizationId: "org", clusterId: "" };
    if (secret === "job-secret") return { kind: CredentialKind.JOB, agentId: "agent-1", organizationId: "org" };
    if (secret === "broken") throw new ConnectError("down", Code.Unavailable);
    return undefined;
  },
} as unknown as AgentCredentialCache;

/** One call of StreamPings: its response headers, the actions as they arrive, and its trailers once it ends. */
function call(session: ClientHttp2Session, token: string, agentId = "agent-1") {
  const actions: wire.StreamAction[] = [];
  let headers: Record<string, unknown> = {};
  let buffered: Buffer = Buffer.alloc(0);
  const req = session.request({
    [constants.HTTP2_HEADER_METHOD]: "POST",
    [constants.HTTP2_HEADER_PATH]: STREAM_PINGS_PATH,
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Token ${token}`,
  });
  req.on("response", (h) => {
    headers = h;
  });
  req.on("data", (chunk: Buffer) => {
    const { messages, rest } = wire.unframe(Buffer.concat([buffered, chunk]));
    buffered = rest;
    for (const m of messages) {
      const action = wire.decodeAction(m);
      if (action) actions.push(action);
    }
  });
  const trailers = new Promise<Record<string, unknown>>((resolve) => {
    let got: Record<string, unknown> = {};
    req.on("trailers", (t) => {
      got = t;
    });
    req.on("close", () => resolve({ ...headers, ...got }));
  });
  req.end(wire.frame(wire.encodeRequest(agentId)));
  return { actions, trailers, req, headers: () => headers };
}

async function expectActions(c: { actions: wire.StreamAction[] }, expected: wire.StreamAction[]): Promise<void> {
  await until(() => c.actions.length >= expected.length).catch(() => undefined);
  expect(c.actions).toEqual(expected);
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("StreamPings over TLS and HTTP/2", () => {
  let dir: string;
  let port: number;
  let services: ReturnType<typeof fakeServices>;
  let streams: AgentStreams;
  let session: ClientHttp2Session;
  const app = Fastify();
  let server: ReturnType<typeof createTlsServer>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "stream-route-"));
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]
        .concat(["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-subj", "/CN=localhost"])
        .concat(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]),
      { stdio: "ignore" },
    );
    services = fakeServices();
    streams = createAgentStreams({
      agents: services.agents as never,
      builds: services.builds as never,
      logger: createLogger("test", "silent"),
      settings: { retryDelaysMs: [] },
    });
    await registerStreamPings(app, { credentials, streams, keepaliveMs: 50 });
    app.get("/plain", async () => ({ ok: true }));
    await app.ready();
    server = createTlsServer(
      app,
      { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem"), port: 0 },
      DEFAULT_CLIENT_LIMITS,
    );
    port = await listenTls(server, "127.0.0.1", 0);
  });

  beforeEach(() => {
    session = connect(`https://localhost:${port}`, { rejectUnauthorized: false });
    services.state.agent = create(AgentSchema, { id: "agent-1", organizationId: "org", connectionState: "connected" });
    services.state.ping = { action: "idle", message: "", jobId: "" };
  });

  afterEach(() => session.close());

  afterAll(async () => {
    streams.closeAll();
    await new Promise((r) => server.close(r));
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const agentAs = (fields: Partial<Omit<Agent, "$typeName">>): Agent =>
    create(AgentSchema, { id: "agent-1", organizationId: "org", connectionState: "connected", ...fields } as never);

  it("tells an idle agent to carry on, then pause and resume as its agent changes, without asking twice", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    expect(c.headers()["content-type"]).toBe("application/grpc");
    await expectActions(c, [{ kind: "resume" }]);
    services.state.ping = { action: "pause", message: "Paused: upgrade", jobId: "" };
    await streams.agentChanged(agentAs({ paused: true }));
    await streams.agentChanged(agentAs({ paused: true }));
    services.state.ping = { action: "idle", message: "", jobId: "" };
    await streams.agentChanged(agentAs({}));
    await expectActions(c, [{ kind: "resume" }, { kind: "pause", reason: "Paused: upgrade" }, { kind: "resume" }]);
  });

  it("sends job_assigned when a runnable job of the agent's queue is offered to it, once", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    services.state.ping = { action: "idle", message: "", jobId: "job-1" };
    await streams.jobRunnable({ id: "job-1", organizationId: "org", clusterId: "", agentQueryRules: [] });
    streams.jobDispatched("agent-1", "job-1");
    await expectActions(c, [{ kind: "resume" }, { kind: "job_assigned", jobId: "job-1" }]);
  });

  it("never pings an agent holding a job (its pause still reaches it); pings again once the job is done", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    services.state.ping = { action: "idle", message: "", jobId: "job-2", heldJobId: "" };
    await streams.jobRunnable({ id: "job-2", organizationId: "org", clusterId: "", agentQueryRules: [] });
    const pings = services.state.pings;
    await streams.agentChanged(agentAs({ currentJobId: "job-2", paused: true, pausedNote: "n" }));
    await streams.jobRunnable({ id: "job-3", organizationId: "org", clusterId: "", agentQueryRules: [] });
    expect(services.state.pings).toBe(pings);
    services.state.ping = { action: "pause", message: "Paused: n", jobId: "", heldJobId: "" };
    await streams.agentChanged(agentAs({ paused: true, pausedNote: "n" }));
    expect(services.state.pings).toBe(pings + 1);
    await expectActions(c, [
      { kind: "resume" },
      { kind: "job_assigned", jobId: "job-2" },
      { kind: "pause", reason: "Paused: n" },
    ]);
  });

  it("tells a job its ping was offered even when job_dispatched arrives before the ping's answer", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    services.state.ping = { action: "idle", message: "", jobId: "job-7", heldJobId: "" };
    const original = services.agents.pingAgent;
    services.agents.pingAgent = async (req) => {
      streams.jobDispatched("agent-1", "job-7");
      return original(req);
    };
    await streams.jobRunnable({ id: "job-7", organizationId: "org", clusterId: "", agentQueryRules: [] });
    services.agents.pingAgent = original;
    await expectActions(c, [{ kind: "resume" }, { kind: "job_assigned", jobId: "job-7" }]);
  });

  it("does not tell again a job the agent's own poll was assigned, nor ask for another while it holds it", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    const pings = services.state.pings;
    streams.jobDispatched("agent-1", "job-9");
    await streams.jobRunnable({ id: "job-10", organizationId: "org", clusterId: "", agentQueryRules: [] });
    await streams.agentChanged(agentAs({ currentJobId: "job-9" }));
    expect(services.state.pings).toBe(pings);
    await expectActions(c, [{ kind: "resume" }]);
  });

  it("asks on the stream's behalf: a job the agent's own poll took is named, not told, and no other is asked for", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    // The poll's job_dispatched has not arrived: the agents service names the job its agent holds.
    services.state.ping = { action: "idle", message: "", jobId: "", heldJobId: "job-11" };
    await streams.jobRunnable({ id: "job-12", organizationId: "org", clusterId: "", agentQueryRules: [] });
    const pings = services.state.pings;
    await streams.jobRunnable({ id: "job-13", organizationId: "org", clusterId: "", agentQueryRules: [] });
    expect(services.state.pings).toBe(pings);
    expect(services.state.forStream).toBe(true);
    // Paused while it runs that job: the pause reaches it at once.
    services.state.ping = { action: "pause", message: "Paused: p", jobId: "", heldJobId: "job-11" };
    await streams.agentChanged(agentAs({ currentJobId: "", paused: true, pausedNote: "p" }));
    await expectActions(c, [{ kind: "resume" }, { kind: "pause", reason: "Paused: p" }]);
  });

  it("tells a job of another queue to nobody here", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    const pings = services.state.pings;
    await streams.jobRunnable({ id: "job-4", organizationId: "org", clusterId: "", agentQueryRules: ["queue=mac"] });
    await streams.jobRunnable({ id: "job-5", organizationId: "other", clusterId: "", agentQueryRules: [] });
    expect(services.state.pings).toBe(pings);
  });

  it("sends disconnect and ends with OK when the agent is asked to stop", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    services.state.ping = { action: "disconnect", message: "This agent was asked to stop.", jobId: "" };
    await streams.agentChanged(agentAs({ connectionState: "connected" }));
    const t = await c.trailers;
    expect(t["grpc-status"]).toBe("0");
    expect(c.actions.at(-1)).toEqual({ kind: "disconnect", reason: "This agent was asked to stop." });
    expect(streams.size).toBe(0);
  });

  it("replaces an agent's older stream (Unavailable) with its newer one", async () => {
    const first = call(session, "agent-secret");
    await until(() => first.actions.length === 1);
    const second = call(session, "agent-secret");
    expect((await first.trailers)["grpc-status"]).toBe(String(14));
    await until(() => second.actions.length === 1);
    expect(streams.size).toBe(1);
    streams.replacedElsewhere("agent-1", "a-stream-on-another-gateway");
    expect((await second.trailers)["grpc-status"]).toBe(String(14));
  });

  it.each([
    ["no such token", "nope", "agent-1", 16],
    ["a job token", "job-secret", "agent-1", 16],
    ["another agent's id", "agent-secret", "agent-2", 7],
    ["the credential check failing", "broken", "agent-1", 14],
  ])("answers %s with a gRPC status and no stream", async (_what, token, agentId, status) => {
    const c = call(session, token, agentId);
    const t = await c.trailers;
    expect(t["grpc-status"]).toBe(String(status));
    expect(c.actions).toEqual([]);
  });

  it("answers Unimplemented over HTTP/1.1 (the agent polls), while other routes work on either", async () => {
    const answer = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
      (resolve, reject) => {
        const req = httpsRequest(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: STREAM_PINGS_PATH,
            rejectUnauthorized: false,
            headers: { "content-type": "application/grpc", authorization: "Token agent-secret" },
          },
          (res) => {
            let body = "";
            res.on("data", (d) => {
              body += d;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          },
        );
        req.on("error", reject);
        req.end(wire.frame(wire.encodeRequest("agent-1")));
      },
    );
    expect(answer.headers["grpc-status"]).toBe("12");
    const plain = session.request({ [constants.HTTP2_HEADER_PATH]: "/plain" });
    let body = "";
    plain.on("data", (d) => {
      body += d;
    });
    await new Promise((r) => plain.on("end", r));
    expect(JSON.parse(body)).toEqual({ ok: true });
  });

  it("ends every stream with Unavailable when the gateway stops", async () => {
    const c = call(session, "agent-secret");
    await until(() => c.actions.length === 1);
    streams.closeAll();
    expect((await c.trailers)["grpc-status"]).toBe("14");
  });
});
