import { Role } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { AUTHENTICATION_REQUIRED } from "../auth/authenticate.js";
import { buildTestApp, type FakeWorld, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

const acme = makeOrg("acme", "Acme");
const beta = makeOrg("beta", "Beta");
const hidden = makeOrg("hidden", "Hidden");
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const cy = makeUser(3, "Cy");

function world(): FakeWorld {
  return {
    orgs: [acme, beta, hidden],
    users: [ann, bob, cy],
    tokens: new Map([
      [
        "full",
        makePrincipal(
          ann,
          ["read_organizations", "read_builds"],
          [
            [acme, Role.ADMIN],
            [beta, Role.MEMBER],
          ],
        ),
      ],
      ["noscope", makePrincipal(bob, ["read_builds"], [[acme, Role.MEMBER]])],
    ]),
    revoked: [],
  };
}

describe("gateway", () => {
  let app: FastifyInstance;
  let fake: FakeWorld;
  beforeEach(async () => {
    fake = world();
    app = (await buildTestApp(fake)).app;
  });
  afterEach(() => app.close());

  const get = (url: string, token?: string) =>
    app.inject({ method: "GET", url, headers: token ? { authorization: `Bearer ${token}` } : {} });

  describe("route declarations", () => {
    it("refuses to register a route of the REST API's scope without a scope", async () => {
      const bare = (await import("fastify")).default();
      const { registerAuthentication } = await import("../auth/authenticate.js");
      const { createPrincipalCache } = await import("../auth/principal-cache.js");
      registerAuthentication(
        bare,
        createPrincipalCache(async () => null, { ttlMs: 0 }),
      );
      expect(() => bare.get("/v2/unlisted", async () => ({}))).toThrow(/declares no scope/);
      expect(() => bare.get("/v2/listed", { config: { scope: "read_builds" } }, async () => ({}))).not.toThrow();
    });

    it("refuses to register an API route without an operationId, summary and tags", async () => {
      const bare = (await import("fastify")).default();
      const { requireDocumentedRoutes } = await import("../route-declarations/declare.js");
      requireDocumentedRoutes(bare);
      expect(() => bare.get("/v3/unnamed", { config: { credential: ["agent"] } }, async () => ({}))).toThrow(
        /declares no operationId/,
      );
      const schema = { operationId: "named", summary: "Named", tags: ["agent"] };
      expect(() => bare.get("/v3/named", { schema }, async () => ({}))).not.toThrow();
    });
  });

  describe("scopes", () => {
    it("runs neither the REST API's authentication nor its rate limit for public routes and unknown URLs", async () => {
      for (const url of ["/", "/healthz", "/v2/openapi.json"]) {
        const res = await get(url);
        expect([url, res.statusCode]).toEqual([url, 200]);
      }
      const unknown = await app.inject({ method: "POST", url: "/v2/organizations/acme/nowhere", payload: {} });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual({ message: "Not Found" });
    });

    it("keeps the two APIs' credentials apart: a bearer token opens no agent route, an agent token no REST route", async () => {
      const agentRoute = await app.inject({
        method: "GET",
        url: "/v3/ping",
        headers: { authorization: "Bearer full" },
      });
      expect(agentRoute.statusCode).toBe(401);
      const restRoute = await app.inject({
        method: "GET",
        url: "/v2/organizations",
        headers: { authorization: "Token full" },
      });
      expect(restRoute.statusCode).toBe(401);
      expect(restRoute.json()).toEqual({ message: AUTHENTICATION_REQUIRED });
    });
  });

  describe("authentication", () => {
    it.each([
      ["no header", undefined],
      ["an unknown token", "nope"],
    ])("answers 401 with Buildkite's message for %s", async (_label, token) => {
      const res = await get("/v2/organizations", token);
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ message: AUTHENTICATION_REQUIRED });
    });

    it("accepts only the Bearer scheme", async () => {
      const res = await app.inject({
        method: "GET",
        url: "/v2/organizations",
        headers: { authorization: "Token full" },
      });
      expect(res.statusCode).toBe(401);
    });

    it("answers 403 naming the missing scope", async () => {
      const res = await get("/v2/organizations", "noscope");
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ message: "Your access token doesn't have the read_organizations scope" });
    });

    it("returns the calling token from /v2/access-token", async () => {
      const res = await get("/v2/access-token", "noscope");
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ scopes: ["read_builds"], user: { name: "Bob", email: "bob@example.com" } });
    });

    it("revokes the calling token with DELETE /v2/access-token and stops honouring it at once", async () => {
      const del = await app.inject({
        method: "DELETE",
        url: "/v2/access-token",
        headers: { authorization: "Bearer full" },
      });
      expect(del.statusCode).toBe(204);
      expect(fake.revoked).toHaveLength(1);
      fake.tokens.delete("full");
      expect((await get("/v2/organizations", "full")).statusCode).toBe(401);
    });
  });

  describe("organizations", () => {
    it("lists the reachable organizations with every field", async () => {
      const res = await get("/v2/organizations", "full");
      expect(res.statusCode).toBe(200);
      expect(res.headers.link).toBeUndefined();
      const body = res.json();
      expect(body.map((o: { slug: string }) => o.slug)).toEqual(["acme", "beta"]);
      expect(body[0]).toEqual({
        id: acme.id,
        graphql_id: Buffer.from(`Organization---${acme.id}`).toString("base64"),
        url: "http://api.test/v2/organizations/acme",
        web_url: "http://web.test/acme",
        name: "Acme",
        slug: "acme",
        pipelines_url: "http://api.test/v2/organizations/acme/pipelines",
        agents_url: "http://api.test/v2/organizations/acme/agents",
        emojis_url: "http://api.test/v2/organizations/acme/emojis",
        created_at: "2026-01-02T03:04:05.678Z",
      });
    });

    it("pages with one Link header of absolute URLs with explicit page numbers", async () => {
      const res = await get("/v2/organizations?per_page=1", "full");
      expect(res.json()).toHaveLength(1);
      expect(res.headers.link).toBe(
        '<http://api.test/v2/organizations?per_page=1&page=2>; rel="next", ' +
          '<http://api.test/v2/organizations?per_page=1&page=1>; rel="first", ' +
          '<http://api.test/v2/organizations?per_page=1&page=2>; rel="last"',
      );
      const last = await get("/v2/organizations?per_page=1&page=2", "full");
      expect(last.json()[0].slug).toBe("beta");
      expect(last.headers.link).toContain('<http://api.test/v2/organizations?per_page=1&page=1>; rel="prev"');
      expect(last.headers.link).not.toContain('rel="next"');
    });

    it.each(["0", "-1", "abc", "1.5"])("answers 400 for page=%s", async (page) => {
      const res = await get(`/v2/organizations?page=${page}`, "full");
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/page must be a positive integer/);
    });

    it("gets one organization and hides those out of reach as 404", async () => {
      expect((await get("/v2/organizations/acme", "full")).json().slug).toBe("acme");
      for (const slug of ["hidden", "ghost"]) {
        const res = await get(`/v2/organizations/${slug}`, "full");
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ message: "No organization found" });
      }
    });
  });

  describe("members", () => {
    it("lists id, name and email, paged", async () => {
      const res = await get("/v2/organizations/acme/members?per_page=2", "full");
      expect(res.json()).toEqual([
        { id: ann.id, name: "Ann", email: "ann@example.com" },
        { id: bob.id, name: "Bob", email: "bob@example.com" },
      ]);
      expect(res.headers.link).toContain('page=2>; rel="next"');
    });

    it("gets one member; unknown ids are 404", async () => {
      expect((await get(`/v2/organizations/acme/members/${cy.id}`, "full")).json()).toEqual({
        id: cy.id,
        name: "Cy",
        email: "cy@example.com",
      });
      const missing = await get("/v2/organizations/acme/members/not-a-uuid", "full");
      expect(missing.statusCode).toBe(404);
      expect((await get(`/v2/organizations/hidden/members/${cy.id}`, "full")).json()).toEqual({
        message: "No organization found",
      });
    });
  });

  describe("bad requests", () => {
    const del = (payload: string, contentType: string) =>
      app.inject({
        method: "DELETE",
        url: "/v2/access-token",
        headers: { authorization: "Bearer full", "content-type": contentType },
        payload,
      });

    it("answers 404 JSON for unknown routes", async () => {
      const res = await get("/v2/nothing-here", "full");
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ message: "Not Found" });
    });

    it("answers 400 for malformed JSON", async () => {
      const res = await del("{not json", "application/json");
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toMatch(/Problems parsing JSON/);
    });

    it("answers 415 for a body that is not JSON", async () => {
      const res = await del("a=b", "text/csv");
      expect(res.statusCode).toBe(415);
      expect(res.json().message).toMatch(/Content-Type: application\/json/);
    });

    it("answers 413 for an oversized body", async () => {
      const res = await del(JSON.stringify({ x: "y".repeat(10_000) }), "application/json");
      expect(res.statusCode).toBe(413);
      expect(res.json()).toEqual({ message: "Request body is too large" });
    });

    it("nothing was revoked by any of them", async () => {
      await del("{not json", "application/json");
      await del("a=b", "text/csv");
      expect(fake.revoked).toEqual([]);
    });
  });

  it("answers GET / without authentication", async () => {
    const res = await get("/");
    expect(res.statusCode).toBe(200);
    expect(res.json().message).toBe("🛠");
  });
});
