import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AgentTokenSchema,
  ClusterQueueSchema,
  ClusterSchema,
  type CreateClusterQueueRequest,
  type PauseClusterQueueRequest,
} from "@conveyor/proto/agents";
import { Role, TeamSchema } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// A cluster's queues, its token updates, its deletion and its maintainers over a recording agents service: the
// shapes go-buildkite decodes, administrators and the cluster's maintainers (a user, or through a team) for writes.

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const cyd = makeUser(3, "Cyd");
const CLUSTER = "66666666-0000-4000-8000-000000000001";
const QUEUE = "77777777-0000-4000-8000-000000000001";
const TEAM = "88888888-0000-4000-8000-000000000001";
const at = timestampFromDate(new Date("2026-02-03T04:05:06.000Z"));
const cluster = create(ClusterSchema, { id: CLUSTER, organizationId: acme.id, name: "Linux", createdAt: at });
const queue = create(ClusterQueueSchema, {
  id: QUEUE,
  organizationId: acme.id,
  clusterId: CLUSTER,
  key: "linux",
  description: "d",
  createdAt: at,
});
const token = create(AgentTokenSchema, { id: "t-1", organizationId: acme.id, clusterId: CLUSTER, description: "x" });

let app: FastifyInstance;
const calls = { create: [] as CreateClusterQueueRequest[], pause: [] as PauseClusterQueueRequest[], deleted: 0 };
const scopes = ["read_clusters", "write_clusters"];

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann, bob, cyd],
      tokens: new Map([
        ["admin", makePrincipal(ann, scopes, [[acme, Role.ADMIN]])],
        ["maintainer", makePrincipal(bob, scopes, [[acme, Role.MEMBER]])],
        ["teamed", makePrincipal(cyd, scopes, [[acme, Role.MEMBER]])],
        ["member", makePrincipal(makeUser(4, "Dee"), scopes, [[acme, Role.MEMBER]])],
      ]),
      revoked: [],
    },
    {
      agents: {
        getCluster(req) {
          if (req.id !== CLUSTER) throw new ConnectError("No cluster found", Code.NotFound);
          return { cluster };
        },
        listClusterMaintainers: () => ({
          maintainers: [
            { id: "m-1", clusterId: CLUSTER, userId: bob.id },
            { id: "m-2", clusterId: CLUSTER, teamId: TEAM },
          ],
        }),
        listClusterQueues: () => ({ queues: [queue] }),
        getClusterQueue(req) {
          if (req.id !== QUEUE) throw new ConnectError("No queue found", Code.NotFound);
          return { queue };
        },
        createClusterQueue(req) {
          calls.create.push(req);
          return { queue: { ...queue, key: req.key } };
        },
        updateClusterQueue: (req) => ({ queue: { ...queue, description: req.description ?? queue.description } }),
        deleteClusterQueue() {
          throw new ConnectError(
            "Queue linux has 1 connected agent: stop them before deleting it",
            Code.FailedPrecondition,
          );
        },
        pauseClusterQueue(req) {
          calls.pause.push(req);
          return {
            queue: {
              ...queue,
              dispatchPaused: true,
              dispatchPausedAt: at,
              dispatchPausedNote: req.note,
              dispatchPausedBy: req.pausedBy,
            },
          };
        },
        resumeClusterQueue: () => ({ queue }),
        listAgentTokens: () => ({ tokens: [token] }),
        updateAgentToken: (req) => ({ token: { ...token, description: req.description ?? token.description } }),
        deleteCluster() {
          calls.deleted++;
          return {};
        },
      },
      teams: { listUserTeams: (req) => ({ teams: req.userId === cyd.id ? [create(TeamSchema, { id: TEAM })] : [] }) },
    },
  ));
});
afterAll(() => app.close());

const call = (method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", url: string, payload?: unknown, secret = "admin") =>
  app.inject({ method, url, headers: { authorization: `Bearer ${secret}` }, ...(payload ? { payload } : {}) });
const BASE = `/v2/organizations/acme/clusters/${CLUSTER}`;

describe("the cluster queue routes", () => {
  it("lists and gets queues as go-buildkite's ClusterQueue decodes them", async () => {
    const listed = await call("GET", `${BASE}/queues`, undefined, "member");
    expect(listed.json()).toEqual([
      {
        id: QUEUE,
        graphql_id: expect.any(String),
        key: "linux",
        description: "d",
        url: `http://api.test${BASE}/queues/${QUEUE}`,
        web_url: expect.stringContaining(`/queues/${QUEUE}`),
        cluster_url: `http://api.test${BASE}`,
        hosted: false,
        dispatch_paused: false,
        dispatch_paused_by: null,
        dispatch_paused_at: null,
        dispatch_paused_note: null,
        created_at: "2026-02-03T04:05:06.000Z",
        created_by: null,
      },
    ]);
    expect((await call("GET", `${BASE}/queues/${QUEUE}`, undefined, "member")).json()).toMatchObject({ key: "linux" });
    expect((await call("GET", `${BASE}/queues/other`)).json()).toEqual({ message: "No queue found" });
  });

  it("lets administrators and the cluster's maintainers (a user, or a team's member) change queues; no one else", async () => {
    for (const who of ["admin", "maintainer", "teamed"]) {
      expect((await call("POST", `${BASE}/queues`, { key: "gpu" }, who)).statusCode).toBe(201);
    }
    expect(calls.create.map((c) => c.createdBy?.name)).toEqual(["Ann", "Bob", "Cyd"]);
    expect((await call("POST", `${BASE}/queues`, { key: "gpu" }, "member")).statusCode).toBe(403);
    const refused = await call("POST", `${BASE}/queues`, { key: "gpu", hosted_agents: { instance_shape: "x" } });
    expect([refused.statusCode, refused.json().errors]).toEqual([
      422,
      [{ field: "hosted_agents", code: "is not taken" }],
    ]);
    expect((await call("PATCH", `${BASE}/queues/${QUEUE}`, { description: "new" })).json().description).toBe("new");
    expect((await call("PATCH", `${BASE}/queues/${QUEUE}`, { key: "other" })).statusCode).toBe(422);
  });

  it("pauses with a note and who paused it, resumes, and answers a refused delete 422 with its reason", async () => {
    const paused = await call("POST", `${BASE}/queues/${QUEUE}/pause_dispatch`, { dispatch_paused_note: "freeze" });
    expect(paused.json()).toMatchObject({
      dispatch_paused: true,
      dispatch_paused_note: "freeze",
      dispatch_paused_at: "2026-02-03T04:05:06.000Z",
      dispatch_paused_by: { id: ann.id, name: "Ann" },
    });
    expect((await call("POST", `${BASE}/queues/${QUEUE}/pause_dispatch`)).statusCode).toBe(200);
    expect(calls.pause.map((p) => p.note)).toEqual(["freeze", ""]);
    expect((await call("POST", `${BASE}/queues/${QUEUE}/resume_dispatch`)).json().dispatch_paused).toBe(false);
    expect((await call("POST", `${BASE}/queues/${QUEUE}/resume_dispatch`, undefined, "member")).statusCode).toBe(403);
    const refused = await call("DELETE", `${BASE}/queues/${QUEUE}`);
    expect([refused.statusCode, refused.json().message]).toEqual([422, expect.stringContaining("1 connected agent")]);
  });

  it("updates a token's description with PUT or PATCH, refusing allowed_ip_addresses by name", async () => {
    expect((await call("PUT", `${BASE}/tokens/t-1`, { description: "ci" }, "maintainer")).json().description).toBe(
      "ci",
    );
    expect((await call("PATCH", `${BASE}/tokens/t-1`, { description: "cd" })).json().description).toBe("cd");
    const ip = await call("PATCH", `${BASE}/tokens/t-1`, { allowed_ip_addresses: "10.0.0.0/8" });
    expect(ip.json().errors).toEqual([{ field: "allowed_ip_addresses", code: "is not taken" }]);
    expect((await call("PATCH", `${BASE}/tokens/t-9`, { description: "x" })).statusCode).toBe(404);
  });

  it("deletes a cluster for administrators only (not its maintainers)", async () => {
    expect((await call("DELETE", BASE, undefined, "maintainer")).statusCode).toBe(403);
    expect((await call("DELETE", BASE)).statusCode).toBe(204);
    expect(calls.deleted).toBe(1);
  });
});
