import { Role } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { createRateLimiter } from "../rate-limit/rate-limiter.js";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// GET /v2/user, /v2/meta, …/emojis and …/rate_limit over the test app (docs/compatibility.md#organizations-members-and-the-token).

const acme = makeOrg("acme", "Acme");
const beta = makeOrg("beta", "Beta");
const ann = makeUser(1, "Ann");

function world() {
  return {
    orgs: [acme, beta],
    users: [ann],
    tokens: new Map([
      ["all", makePrincipal(ann, ["read_user", "read_accounts"], [[acme, Role.MEMBER]])],
      ["none", makePrincipal(ann, [], [[acme, Role.MEMBER]])],
    ]),
    revoked: [],
  };
}

const get = (app: FastifyInstance, url: string, secret?: string) =>
  app.inject({ method: "GET", url, headers: secret ? { authorization: `Bearer ${secret}` } : {} });

describe("without a rate limit", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    ({ app } = await buildTestApp(world()));
  });
  afterAll(() => app.close());

  it("answers the token's user as go-buildkite's User.CurrentUser decodes it, with read_user", async () => {
    const res = await get(app, "/v2/user", "all");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: ann.id,
      graphql_id: expect.any(String),
      name: "Ann",
      email: "ann@example.com",
      avatar_url: null,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    const refused = await get(app, "/v2/user", "none");
    expect([refused.statusCode, refused.json().message]).toEqual([
      403,
      "Your access token doesn't have the read_user scope",
    ]);
    expect((await get(app, "/v2/user")).statusCode).toBe(401);
  });

  it("serves Buildkite's meta without a token: no published addresses unless WEBHOOK_IPS names some", async () => {
    const res = await get(app, "/v2/meta");
    expect([res.statusCode, res.json()]).toEqual([200, { webhook_ips: [] }]);
  });

  it("lists no custom emojis for any token of the organization, and 404 for another organization", async () => {
    expect((await get(app, "/v2/organizations/acme/emojis", "none")).json()).toEqual([]);
    const other = await get(app, "/v2/organizations/beta/emojis", "all");
    expect([other.statusCode, other.json().message]).toEqual([404, "No organization found"]);
  });

  it("says the limit is not enforced when the gateway counts nothing", async () => {
    const res = await get(app, "/v2/organizations/acme/rate_limit", "all");
    expect(res.statusCode).toBe(200);
    const rest = res.json().scopes.rest;
    expect(rest).toMatchObject({ limit: 0, current: 0, enforced: false });
    expect(rest.reset).toBeGreaterThanOrEqual(1);
    expect(rest.reset).toBeLessThanOrEqual(60);
    expect(Date.parse(rest.reset_at) % 60_000).toBe(0);
  });
});

describe("with the rate limit", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    const rateLimiter = createRateLimiter({ limit: 50, gatewayId: "g" });
    ({ app } = await buildTestApp(world(), {}, {}, { rateLimiter }));
  });
  afterAll(() => app.close());

  it("answers the organization's current window, this request counted, with read_accounts", async () => {
    await get(app, "/v2/organizations/acme/emojis", "all");
    await get(app, "/v2/organizations/acme/emojis", "all");
    // Requests naming no organization count against the user, not the organization.
    await get(app, "/v2/user", "all");
    const res = await get(app, "/v2/organizations/acme/rate_limit", "all");
    expect(res.statusCode).toBe(200);
    const rest = res.json().scopes.rest;
    expect(rest).toMatchObject({ limit: 50, current: 3, enforced: true });
    expect(res.headers["ratelimit-remaining"]).toBe("47");
    expect(Date.parse(rest.reset_at) - Date.now()).toBeLessThanOrEqual(rest.reset * 1000);
    const refused = await get(app, "/v2/organizations/acme/rate_limit", "none");
    expect([refused.statusCode, refused.json().message]).toEqual([
      403,
      "Your access token doesn't have the read_accounts scope",
    ]);
    expect((await get(app, "/v2/organizations/beta/rate_limit", "all")).statusCode).toBe(404);
  });
});
