import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  AgentTokenSchema,
  ClusterSchema,
  type CreateAgentTokenRequest,
  type RevokeAgentTokenRequest,
} from "@conveyor/proto/agents";
import { Role } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// Clusters and cluster tokens over a recording agents service: scopes, administrators only for writes, the token's
// value in the create's answer only, revoked tokens gone from the lists.

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const CLUSTER = "66666666-0000-4000-8000-000000000001";
const at = timestampFromDate(new Date("2026-02-03T04:05:06.000Z"));
const cluster = create(ClusterSchema, {
  id: CLUSTER,
  organizationId: acme.id,
  name: "Linux",
  description: "d",
  createdAt: at,
});
const token = (id: string, revoked = false) =>
  create(AgentTokenSchema, {
    id,
    organizationId: acme.id,
    clusterId: CLUSTER,
    description: `token ${id}`,
    createdAt: at,
    ...(revoked ? { revokedAt: at } : {}),
  });

let app: FastifyInstance;
const calls = { create: [] as CreateAgentTokenRequest[], revoke: [] as RevokeAgentTokenRequest[] };

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        ["admin", makePrincipal(ann, ["read_clusters", "write_clusters"], [[acme, Role.ADMIN]])],
        ["member", makePrincipal(ann, ["read_clusters", "write_clusters"], [[acme, Role.MEMBER]])],
        ["reader", makePrincipal(ann, ["read_clusters"], [[acme, Role.ADMIN]])],
      ]),
      revoked: [],
    },
    {
      agents: {
        listClusters: () => ({ clusters: [cluster] }),
        getCluster(req) {
          if (req.id !== CLUSTER || req.organizationId !== acme.id)
            throw new ConnectError("No cluster found", Code.NotFound);
          return { cluster };
        },
        createCluster: (req) => ({ cluster: { ...cluster, name: req.name } }),
        updateCluster(req) {
          if (req.id !== CLUSTER) throw new ConnectError("No cluster found", Code.NotFound);
          return { cluster: { ...cluster, name: req.name ?? cluster.name, description: req.description ?? "d" } };
        },
        listClusterMaintainers: () => ({ maintainers: [] }),
        listAgentTokens: () => ({ tokens: [token("t-1"), token("t-old", true)] }),
        createAgentToken(req) {
          calls.create.push(req);
          return { token: token("t-2"), secret: "bkct_secret" };
        },
        revokeAgentToken(req) {
          calls.revoke.push(req);
          return { token: token(req.id, true) };
        },
      },
    },
  ));
});
afterAll(() => app.close());

const call = (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown, secret = "admin") =>
  app.inject({ method, url, headers: { authorization: `Bearer ${secret}` }, ...(payload ? { payload } : {}) });
const BASE = "/v2/organizations/acme/clusters";

describe("the cluster routes", () => {
  it("lists and gets clusters as go-buildkite's Clusters decodes them", async () => {
    const res = await call("GET", BASE, undefined, "reader");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([
      {
        id: CLUSTER,
        graphql_id: expect.any(String),
        name: "Linux",
        description: "d",
        emoji: null,
        color: null,
        default_queue_id: null,
        url: `http://api.test/v2/organizations/acme/clusters/${CLUSTER}`,
        web_url: expect.stringContaining(`/organizations/acme/clusters/${CLUSTER}`),
        queues_url: `http://api.test/v2/organizations/acme/clusters/${CLUSTER}/queues`,
        default_queue_url: null,
        created_at: "2026-02-03T04:05:06.000Z",
        created_by: null,
      },
    ]);
    expect((await call("GET", `${BASE}?page=2`, undefined, "reader")).json()).toEqual([]);
    expect((await call("GET", `${BASE}/${CLUSTER}`, undefined, "reader")).json()).toMatchObject({ id: CLUSTER });
    expect((await call("GET", `${BASE}/other`, undefined, "reader")).json()).toEqual({ message: "No cluster found" });
  });

  it("creates clusters for administrators, refusing emoji and color (422 naming them) and members (403)", async () => {
    const res = await call("POST", BASE, { name: "Mac", description: "m" });
    expect([res.statusCode, res.json().name]).toEqual([201, "Mac"]);
    const refused = await call("POST", BASE, { name: "Mac", emoji: ":apple:", color: "#fff" });
    expect(refused.json().errors.map((e: { field: string }) => e.field)).toEqual(["emoji", "color"]);
    expect((await call("POST", BASE, { name: "Mac" }, "member")).statusCode).toBe(403);
    expect((await call("POST", BASE, { name: "Mac" }, "reader")).statusCode).toBe(403);
  });

  it("updates a cluster's name or description for administrators, keeping what is absent", async () => {
    const res = await app.inject({
      method: "PATCH",
      url: `${BASE}/${CLUSTER}`,
      headers: { authorization: "Bearer admin" },
      payload: { description: "new" },
    });
    expect(res.json()).toMatchObject({ name: "Linux", description: "new" });
    const member = await app.inject({
      method: "PATCH",
      url: `${BASE}/${CLUSTER}`,
      headers: { authorization: "Bearer member" },
      payload: { name: "X" },
    });
    expect(member.statusCode).toBe(403);
    const unknown = await app.inject({
      method: "PATCH",
      url: `${BASE}/${CLUSTER}`,
      headers: { authorization: "Bearer admin" },
      payload: { default_queue_id: "q" },
    });
    expect(unknown.statusCode).toBe(422);
  });

  it("lists active tokens without values, shows the value once on create, and revokes", async () => {
    const listed = await call("GET", `${BASE}/${CLUSTER}/tokens`, undefined, "reader");
    expect(listed.json().map((t: { id: string }) => t.id)).toEqual(["t-1"]);
    expect(listed.json()[0].token).toBeUndefined();
    expect((await call("GET", `${BASE}/${CLUSTER}/tokens/t-old`, undefined, "reader")).json()).toEqual({
      message: "No token found",
    });
    const created = await call("POST", `${BASE}/${CLUSTER}/tokens`, { description: "ci" });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      id: "t-2",
      token: "bkct_secret",
      cluster_url: expect.stringContaining(CLUSTER),
    });
    expect(calls.create[0]).toMatchObject({ organizationId: acme.id, clusterId: CLUSTER, description: "ci" });
    expect(
      (await call("POST", `${BASE}/${CLUSTER}/tokens`, { description: "ci", allowed_ip_addresses: "1.2.3.4/32" }))
        .statusCode,
    ).toBe(422);
    expect((await call("DELETE", `${BASE}/${CLUSTER}/tokens/t-1`)).statusCode).toBe(204);
    expect(calls.revoke).toEqual([expect.objectContaining({ organizationId: acme.id, id: "t-1" })]);
    expect((await call("DELETE", `${BASE}/${CLUSTER}/tokens/t-old`)).statusCode).toBe(404);
    expect((await call("DELETE", `${BASE}/${CLUSTER}/tokens/t-1`, undefined, "member")).statusCode).toBe(403);
  });
});
