import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Agent, AgentSchema, type PauseAgentRequest, type ResumeAgentRequest } from "@conveyor/proto/agents";
import { Role } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// Pausing and resuming agents over REST as go-buildkite's Agents.Pause and Agents.Resume call it, and the pause
// fields of the REST agent.
const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const AGENT = "66666666-0000-4000-8000-000000000001";
const at = (iso: string) => timestampFromDate(new Date(iso));

let agent: Agent;
const pauses: PauseAgentRequest[] = [];
const resumes: ResumeAgentRequest[] = [];
let app: FastifyInstance;

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann, bob],
      tokens: new Map([
        ["admin", makePrincipal(ann, ["read_agents", "write_agents"], [[acme, Role.ADMIN]])],
        ["member", makePrincipal(bob, ["read_agents", "write_agents"], [[acme, Role.MEMBER]])],
        ["reader", makePrincipal(ann, ["read_agents"], [[acme, Role.ADMIN]])],
      ]),
      revoked: [],
    },
    {
      agents: {
        getAgent: (req) => {
          if (req.id !== AGENT) throw new ConnectError("No agent found", Code.NotFound);
          return { agent };
        },
        pauseAgent(req) {
          pauses.push(req);
          if (agent.paused) throw new ConnectError("Agent is already paused", Code.FailedPrecondition);
          if (req.timeoutInMinutes === 0)
            throw new ConnectError("Timeout in minutes must be a whole number from 1 to 10080", Code.InvalidArgument);
          agent = create(AgentSchema, {
            ...agent,
            paused: true,
            pausedNote: req.note,
            pausedAt: at("2026-03-01T10:00:00.000Z"),
            pausedBy: req.pausedBy,
            pausedTimeoutInMinutes: req.timeoutInMinutes ?? 5,
          });
          return { agent };
        },
        resumeAgent(req) {
          resumes.push(req);
          if (!agent.paused) throw new ConnectError("Agent is not paused", Code.FailedPrecondition);
          agent = create(AgentSchema, { ...agent, paused: false, pausedNote: "" });
          agent.pausedAt = undefined;
          agent.pausedBy = undefined;
          agent.pausedTimeoutInMinutes = undefined;
          return { agent };
        },
      },
    },
  ));
});
afterAll(() => app.close());
beforeEach(() => {
  agent = create(AgentSchema, { id: AGENT, name: "box-1", connectionState: "connected", metaData: ["queue=default"] });
  pauses.length = 0;
  resumes.length = 0;
});

const put = (path: string, secret: string, payload?: Record<string, unknown>) =>
  app.inject({
    method: "PUT",
    url: `/v2/organizations/acme/agents/${AGENT}/${path}`,
    headers: { authorization: `Bearer ${secret}` },
    ...(payload ? { payload } : {}),
  });
const getAgent = async () =>
  (
    await app.inject({
      method: "GET",
      url: `/v2/organizations/acme/agents/${AGENT}`,
      headers: { authorization: "Bearer admin" },
    })
  ).json();

describe("PUT …/agents/{id}/pause and /resume", () => {
  it("pauses with a note and timeout, records who paused it, and the agent shows it", async () => {
    const res = await put("pause", "admin", { note: "Maintenance scheduled", timeout_in_minutes: 60 });
    expect(res.statusCode).toBe(204);
    expect(pauses[0]).toMatchObject({
      organizationId: acme.id,
      id: AGENT,
      note: "Maintenance scheduled",
      timeoutInMinutes: 60,
    });
    expect(pauses[0]?.pausedBy).toMatchObject({ id: ann.id, name: "Ann", email: "ann@example.com" });
    expect(await getAgent()).toMatchObject({
      paused: true,
      paused_note: "Maintenance scheduled",
      paused_at: "2026-03-01T10:00:00.000Z",
      paused_timeout_in_minutes: 60,
      paused_by: { id: ann.id, name: "Ann", email: "ann@example.com", created_at: "2026-01-01T00:00:00.000Z" },
    });
  });

  it("takes go-buildkite's empty body, leaving the timeout to the service's default", async () => {
    expect((await put("pause", "admin", {})).statusCode).toBe(204);
    expect(pauses[0]?.timeoutInMinutes).toBeUndefined();
    expect(pauses[0]?.note).toBe("");
    expect(await getAgent()).toMatchObject({ paused: true, paused_note: null, paused_timeout_in_minutes: 5 });
  });

  it("answers 422 with Buildkite's message for an agent already paused, and for a bad timeout", async () => {
    await put("pause", "admin", {});
    const again = await put("pause", "admin", {});
    expect(again.statusCode).toBe(422);
    expect(again.json()).toEqual({ message: "Agent is already paused" });
    agent.paused = false;
    const bad = await put("pause", "admin", { timeout_in_minutes: 0 });
    expect(bad.json()).toEqual({ message: "Timeout in minutes must be a whole number from 1 to 10080" });
    expect((await put("pause", "admin", { timeout_in_minutes: "ten" })).statusCode).toBe(422);
  });

  it("resumes, and the agent shows no pause", async () => {
    await put("pause", "admin", { note: "x" });
    const res = await put("resume", "admin", {});
    expect(res.statusCode).toBe(204);
    expect(resumes[0]).toMatchObject({ organizationId: acme.id, id: AGENT });
    expect(await getAgent()).toMatchObject({
      paused: false,
      paused_note: null,
      paused_at: null,
      paused_by: null,
      paused_timeout_in_minutes: null,
    });
    expect((await put("resume", "admin")).json()).toEqual({ message: "Agent is not paused" });
  });

  it("is an administrator's call with write_agents", async () => {
    expect((await put("pause", "member", {})).statusCode).toBe(403);
    expect((await put("resume", "member", {})).statusCode).toBe(403);
    const scope = await put("pause", "reader", {});
    expect(scope.statusCode).toBe(403);
    expect(scope.json()).toEqual({ message: "Your access token doesn't have the write_agents scope" });
    expect(pauses).toEqual([]);
  });
});
