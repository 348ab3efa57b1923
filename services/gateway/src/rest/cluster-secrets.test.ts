import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ClusterSchema } from "@conveyor/proto/agents";
import { Role } from "@conveyor/proto/identity";
import {
  ClusterSecretSchema,
  type CreateClusterSecretRequest,
  type UpdateClusterSecretRequest,
} from "@conveyor/proto/secrets";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// Cluster secrets over a recording secrets service: scopes, administrators (or maintainers) only, the value taken by
// the create and PUT …/value and answered by nothing, Buildkite's refusals of key and value on the update.

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const CLUSTER = "66666666-0000-4000-8000-000000000001";
const SECRET = "77777777-0000-4000-8000-000000000001";
const at = timestampFromDate(new Date("2026-02-03T04:05:06.000Z"));
const cluster = create(ClusterSchema, { id: CLUSTER, organizationId: acme.id, name: "Linux", createdAt: at });
const secret = create(ClusterSecretSchema, {
  id: SECRET,
  organizationId: acme.id,
  clusterId: CLUSTER,
  key: "DEPLOY_KEY",
  description: "deploys",
  policy: "- pipeline_slug: web",
  createdAt: at,
  createdBy: { id: ann.id, name: "Ann", email: "ann@example.com" },
  updatedAt: at,
});
const SCOPES = ["read_secret_details", "write_secrets"];

let app: FastifyInstance;
const calls = {
  create: [] as CreateClusterSecretRequest[],
  update: [] as UpdateClusterSecretRequest[],
  value: [] as string[],
};

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        ["admin", makePrincipal(ann, SCOPES, [[acme, Role.ADMIN]])],
        ["member", makePrincipal(ann, SCOPES, [[acme, Role.MEMBER]])],
        ["clusters", makePrincipal(ann, ["read_clusters", "write_clusters"], [[acme, Role.ADMIN]])],
      ]),
      revoked: [],
    },
    {
      agents: {
        getCluster(req) {
          if (req.id !== CLUSTER || req.organizationId !== acme.id)
            throw new ConnectError("No cluster found", Code.NotFound);
          return { cluster };
        },
        listClusterMaintainers: () => ({ maintainers: [] }),
      },
      secrets: {
        listClusterSecrets: () => ({ secrets: [secret] }),
        getClusterSecret(req) {
          if (req.id !== SECRET) throw new ConnectError("No secret found", Code.NotFound);
          return { secret };
        },
        createClusterSecret(req) {
          calls.create.push(req);
          return { secret: { ...secret, key: req.key } };
        },
        updateClusterSecret(req) {
          calls.update.push(req);
          return { secret: { ...secret, description: req.description ?? secret.description } };
        },
        updateClusterSecretValue(req) {
          calls.value.push(req.value);
          return { secret };
        },
        deleteClusterSecret: () => ({}),
        listClusterSecretReads: () => ({
          reads: [{ id: "r1", key: "DEPLOY_KEY", jobId: "j1", allowed: false, reason: "policy", readAt: at }],
        }),
      },
    },
  ));
});
afterAll(() => app.close());

const call = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, token = "admin", payload?: object) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
const BASE = `/v2/organizations/acme/clusters/${CLUSTER}/secrets`;

describe("cluster secrets", () => {
  it("list and get metadata as go-buildkite decodes it, never a value", async () => {
    const list = await call("GET", BASE);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([
      {
        id: SECRET,
        graphql_id: expect.any(String),
        key: "DEPLOY_KEY",
        description: "deploys",
        policy: "- pipeline_slug: web",
        url: `http://api.test/v2/organizations/acme/clusters/${CLUSTER}/secrets/${SECRET}`,
        cluster_url: `http://api.test/v2/organizations/acme/clusters/${CLUSTER}`,
        created_at: "2026-02-03T04:05:06.000Z",
        created_by: { id: ann.id, name: "Ann", email: "ann@example.com" },
        updated_at: "2026-02-03T04:05:06.000Z",
        updated_by: null,
        last_read_at: null,
        organization: {
          id: acme.id,
          slug: "acme",
          url: "http://api.test/v2/organizations/acme",
          web_url: expect.any(String),
        },
      },
    ]);
    expect((await call("GET", `${BASE}/${SECRET}`)).json()).not.toHaveProperty("value");
    expect((await call("GET", `${BASE}/88888888-0000-4000-8000-000000000009`)).statusCode).toBe(404);
  });

  it("create takes key, value, description and policy, answering no value", async () => {
    const res = await call("POST", BASE, "admin", { key: "K", value: "v4lue", description: "d", policy: "" });
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain("v4lue");
    expect(calls.create.at(-1)).toMatchObject({ key: "K", value: "v4lue", description: "d", actor: { name: "Ann" } });
  });

  it("refuses unknown fields by name, and key or value on the update in Buildkite's words", async () => {
    const unknown = await call("POST", BASE, "admin", { key: "K", value: "v", visibility: "all" });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().errors).toEqual([{ field: "visibility", code: "is not taken" }]);
    const key = await call("PUT", `${BASE}/${SECRET}`, "admin", { key: "OTHER" });
    expect(key.statusCode).toBe(422);
    expect(key.json()).toEqual({ message: "The key parameter cannot be updated." });
    const value = await call("PUT", `${BASE}/${SECRET}`, "admin", { value: "x" });
    expect(value.json()).toEqual({ message: "The value parameter cannot be updated on this endpoint." });
    expect(calls.update).toHaveLength(0);
  });

  it("updates description and policy, keeping absent ones, and rotates the value", async () => {
    expect((await call("PUT", `${BASE}/${SECRET}`, "admin", { description: "new" })).statusCode).toBe(200);
    expect(calls.update.at(-1)?.policy).toBeUndefined();
    const rotated = await call("PUT", `${BASE}/${SECRET}/value`, "admin", { value: "n3w-value" });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.body).not.toContain("n3w-value");
    expect(calls.value).toEqual(["n3w-value"]);
    expect((await call("DELETE", `${BASE}/${SECRET}`)).statusCode).toBe(204);
  });

  it("lists reads, allowed or refused", async () => {
    const res = await call("GET", `${BASE}/${SECRET}/reads`);
    expect(res.json()).toEqual([
      expect.objectContaining({ job_id: "j1", allowed: false, reason: "policy", read_at: "2026-02-03T04:05:06.000Z" }),
    ]);
  });

  it("are for administrators and maintainers, with the secrets scopes", async () => {
    expect((await call("GET", BASE, "member")).statusCode).toBe(403);
    expect((await call("POST", BASE, "member", { key: "K", value: "v" })).statusCode).toBe(403);
    expect((await call("GET", BASE, "clusters")).statusCode).toBe(403);
  });
});
