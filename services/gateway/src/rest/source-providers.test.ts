import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Role } from "@conveyor/proto/identity";
import { type CreateSourceProviderRequest, SourceProviderSchema } from "@conveyor/proto/source-providers";
import { invalidFields, notFound } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// The source-provider routes in the gateway alone (docs/statuses.md#connections): administrators only, the
// notifications service's field errors as a 422, no token in any answer.
const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const provider = create(SourceProviderSchema, {
  id: "55555555-0000-4000-8000-000000000001",
  organizationId: acme.id,
  kind: "gitea",
  apiUrl: "http://127.0.0.1:3000/api/v1",
  repositoryHost: "127.0.0.1",
  credentialType: "token",
  description: "",
  createdAt: timestampFromDate(new Date("2026-03-01T10:00:00.000Z")),
  createdBy: ann.id,
});

let app: FastifyInstance;
const created: CreateSourceProviderRequest[] = [];
const deleted: string[] = [];

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        [
          "admin",
          makePrincipal(ann, ["read_notification_services", "write_notification_services"], [[acme, Role.ADMIN]]),
        ],
        [
          "member",
          makePrincipal(ann, ["read_notification_services", "write_notification_services"], [[acme, Role.MEMBER]]),
        ],
        ["reader", makePrincipal(ann, ["read_notification_services"], [[acme, Role.ADMIN]])],
      ]),
      revoked: [],
    },
    {
      sourceProviders: {
        listSourceProviders: () => ({ sourceProviders: [provider] }),
        getSourceProvider(req) {
          if (req.id !== provider.id) throw notFound("source provider");
          return { sourceProvider: provider };
        },
        createSourceProvider(req) {
          if (req.kind === "svn") throw invalidFields([{ field: "kind", code: "must be one of github, gitea" }]);
          created.push(req);
          return { sourceProvider: provider };
        },
        deleteSourceProvider(req) {
          deleted.push(req.id);
          return {};
        },
      },
    },
  ));
});

afterAll(() => app.close());

const call = (token: string, method: "GET" | "POST" | "DELETE", url: string, payload?: object) =>
  app.inject({ method, url, payload, headers: { authorization: `Bearer ${token}` } });

const rendered = {
  id: provider.id,
  url: `http://api.test/v2/organizations/acme/source_providers/${provider.id}`,
  kind: "gitea",
  api_url: "http://127.0.0.1:3000/api/v1",
  repository_host: "127.0.0.1",
  credential_type: "token",
  app_id: null,
  description: null,
  created_at: "2026-03-01T10:00:00.000Z",
};

describe("source-provider routes", () => {
  it("lists and gets connections for an administrator", async () => {
    const list = await call("admin", "GET", "/v2/organizations/acme/source_providers");
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual([rendered]);
    const one = await call("admin", "GET", `/v2/organizations/acme/source_providers/${provider.id}`);
    expect(one.json()).toEqual(rendered);
    const missing = await call("admin", "GET", "/v2/organizations/acme/source_providers/nope");
    expect(missing.statusCode).toBe(404);
  });

  it("creates a connection with the body's fields and answers 201 without the token", async () => {
    const res = await call("admin", "POST", "/v2/organizations/acme/source_providers", {
      kind: "gitea",
      api_url: "http://127.0.0.1:3000",
      token: "s3cret-token",
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual(rendered);
    expect(res.body).not.toContain("s3cret-token");
    expect(created.at(-1)).toMatchObject({
      organizationId: acme.id,
      kind: "gitea",
      apiUrl: "http://127.0.0.1:3000",
      token: "s3cret-token",
      description: "",
      createdBy: ann.id,
    });
  });

  it("hands a GitHub App's id and private key to the service, answering neither key", async () => {
    const key = "-----BEGIN PRIVATE KEY-----\nMIIsecret\n-----END PRIVATE KEY-----";
    const res = await call("admin", "POST", "/v2/organizations/acme/source_providers", {
      kind: "github",
      app_id: "4242",
      private_key: key,
    });
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain("MIIsecret");
    expect(created.at(-1)).toMatchObject({ kind: "github", token: "", appId: "4242", privateKey: key });
  });

  it("answers the service's field errors as a 422 naming the field", async () => {
    const res = await call("admin", "POST", "/v2/organizations/acme/source_providers", { kind: "svn", token: "t" });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ errors: [expect.objectContaining({ field: "kind" })] });
  });

  it("refuses a body without a kind, or with fields of the wrong type", async () => {
    for (const payload of [{ token: "t" }, { kind: 3, token: "t" }, { kind: "github", app_id: 7 }]) {
      const res = await call("admin", "POST", "/v2/organizations/acme/source_providers", payload);
      expect(res.statusCode).toBe(422);
    }
  });

  it("names a field the route does not take in a 422, and creates nothing", async () => {
    const before = created.length;
    const res = await call("admin", "POST", "/v2/organizations/acme/source_providers", {
      kind: "github",
      token: "t",
      installation_id: 3,
      client_secret: "k",
    });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      message: "Validation Failed",
      errors: [
        { field: "installation_id", code: "is not taken" },
        { field: "client_secret", code: "is not taken" },
      ],
    });
    expect(created.length).toBe(before);
  });

  it("deletes with 204", async () => {
    const res = await call("admin", "DELETE", `/v2/organizations/acme/source_providers/${provider.id}`);
    expect(res.body).toBe("");
    expect(res.statusCode).toBe(204);
    expect(deleted).toEqual([provider.id]);
  });

  it("is for administrators only: a member gets 403, another organization 404, a token without the scope 403", async () => {
    const before = created.length;
    expect((await call("member", "GET", "/v2/organizations/acme/source_providers")).statusCode).toBe(403);
    expect(
      (await call("member", "POST", "/v2/organizations/acme/source_providers", { kind: "gitea", token: "t" }))
        .statusCode,
    ).toBe(403);
    expect((await call("admin", "GET", "/v2/organizations/other/source_providers")).statusCode).toBe(404);
    expect(
      (await call("reader", "POST", "/v2/organizations/acme/source_providers", { kind: "gitea", token: "t" }))
        .statusCode,
    ).toBe(403);
    expect(created.length).toBe(before);
  });
});
