import { Role } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { buildTestApp, type FakeWorld, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";
import { createRateLimiter, type RateLimiter } from "./rate-limiter.js";

const acme = makeOrg("acme", "Acme");
const beta = makeOrg("beta", "Beta");
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");

function world(): FakeWorld {
  return {
    orgs: [acme, beta],
    users: [ann, bob],
    tokens: new Map([
      [
        "ann",
        makePrincipal(
          ann,
          ["read_organizations"],
          [
            [acme, Role.ADMIN],
            [beta, Role.MEMBER],
          ],
        ),
      ],
      ["bob", makePrincipal(bob, ["read_organizations"], [[beta, Role.MEMBER]])],
      ["bob-noscope", makePrincipal(bob, [], [[beta, Role.MEMBER]])],
    ]),
    revoked: [],
  };
}

const LIMIT = 3;
/** 18 s into a minute: 42 s until the window resets. */
const NOW = Date.UTC(2026, 10, 22, 10, 0, 18);

describe("the REST rate limit", () => {
  let app: FastifyInstance;
  let limiter: RateLimiter;
  let now: number;
  beforeEach(async () => {
    now = NOW;
    limiter = createRateLimiter({ limit: LIMIT, gatewayId: "test", now: () => now });
    app = (await buildTestApp(world(), {}, {}, { rateLimiter: limiter })).app;
  });
  afterEach(() => app.close());

  const get = (url: string, token?: string) =>
    app.inject({ method: "GET", url, headers: token ? { authorization: `Bearer ${token}` } : {} });

  it("sends the limit, what remains and the seconds until the reset on every answer", async () => {
    const first = await get("/v2/organizations/acme", "ann");
    expect(first.statusCode).toBe(200);
    expect(first.headers).toMatchObject({
      "ratelimit-scope": "rest",
      "ratelimit-limit": "3",
      "ratelimit-remaining": "2",
      "ratelimit-reset": "42",
    });
    expect(first.headers["ratelimit-warning"]).toBeUndefined();
    now += 2_000;
    const second = await get("/v2/organizations/acme", "ann");
    expect(second.headers).toMatchObject({ "ratelimit-remaining": "1", "ratelimit-reset": "40" });
  });

  it("answers 429 with Buildkite's JSON body and a warning once the organization is over its limit", async () => {
    for (let i = 0; i < LIMIT; i++) expect((await get("/v2/organizations/acme", "ann")).statusCode).toBe(200);
    const res = await get("/v2/organizations/acme", "ann");
    expect(res.statusCode).toBe(429);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.json()).toEqual({
      message: "You have exceeded your API rate limit. Please wait 42 seconds before making more requests.",
      scope: "rest",
      limit: 3,
      current: 4,
      reset: 42,
    });
    expect(res.headers).toMatchObject({
      "ratelimit-limit": "3",
      "ratelimit-remaining": "0",
      "ratelimit-reset": "42",
      "ratelimit-warning": "You have exceeded your API rate limit.",
    });
  });

  it("lets requests through again when the next minute begins", async () => {
    for (let i = 0; i <= LIMIT; i++) await get("/v2/organizations/acme", "ann");
    expect((await get("/v2/organizations/acme", "ann")).statusCode).toBe(429);
    now += 42_000;
    const res = await get("/v2/organizations/acme", "ann");
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({ "ratelimit-remaining": "2", "ratelimit-reset": "60" });
  });

  it("counts per organization: another organization of the same caller keeps its own budget", async () => {
    for (let i = 0; i <= LIMIT; i++) await get("/v2/organizations/acme", "ann");
    const res = await get("/v2/organizations/beta", "ann");
    expect(res.statusCode).toBe(200);
    expect(res.headers["ratelimit-remaining"]).toBe("2");
  });

  it("counts every caller of an organization against the same budget", async () => {
    await get("/v2/organizations/beta", "ann");
    await get("/v2/organizations/beta", "ann");
    const res = await get("/v2/organizations/beta", "bob");
    expect(res.headers["ratelimit-remaining"]).toBe("0");
    expect((await get("/v2/organizations/beta", "bob")).statusCode).toBe(429);
  });

  it("counts requests naming no organization against the caller's user", async () => {
    const token = await get("/v2/access-token", "ann");
    expect(token.statusCode).toBe(200);
    expect(token.headers["ratelimit-remaining"]).toBe("2");
    const orgs = await get("/v2/organizations", "ann");
    expect(orgs.headers["ratelimit-remaining"]).toBe("1");
    // The organization's own budget is untouched.
    expect((await get("/v2/organizations/acme", "ann")).headers["ratelimit-remaining"]).toBe("2");
    await get("/v2/access-token", "ann");
    expect((await get("/v2/access-token", "ann")).statusCode).toBe(429);
    // Another user has a budget of their own.
    expect((await get("/v2/access-token", "bob")).statusCode).toBe(200);
  });

  it("does not let a stranger spend an organization's budget: asking for one out of reach counts as the user's", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await get("/v2/organizations/acme", "bob");
      expect(res.statusCode).toBe(i < LIMIT ? 404 : 429);
    }
    const own = await get("/v2/organizations/acme", "ann");
    expect(own.statusCode).toBe(200);
    expect(own.headers["ratelimit-remaining"]).toBe("2");
  });

  it("sends the headers on error answers of routes too", async () => {
    const res = await get("/v2/organizations/beta/members/not-a-uuid", "ann");
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    expect(res.headers["ratelimit-remaining"]).toBe("2");
  });

  it("counts neither unauthenticated requests, nor refused scopes, nor unknown routes, nor public ones", async () => {
    expect((await get("/v2/organizations/acme")).statusCode).toBe(401);
    expect((await get("/v2/organizations/beta", "bob-noscope")).statusCode).toBe(403);
    expect((await get("/v2/nothing-here", "ann")).statusCode).toBe(404);
    const open = await get("/v2/openapi.json");
    expect(open.statusCode).toBe(200);
    for (const res of [open, await get("/v2/organizations/acme")]) {
      expect(res.headers["ratelimit-limit"]).toBeUndefined();
    }
    expect((await get("/v2/organizations/acme", "ann")).headers["ratelimit-remaining"]).toBe("2");
  });

  it("does not limit the agent API", async () => {
    for (let i = 0; i <= LIMIT; i++) await get("/v2/organizations/acme", "ann");
    for (let i = 0; i <= LIMIT; i++) await get("/v2/access-token", "ann");
    const res = await app.inject({ method: "GET", url: "/v3/ping" });
    expect(res.statusCode).toBe(401);
    expect(res.headers["ratelimit-limit"]).toBeUndefined();
  });

  it("lets browsers read the headers across origins", async () => {
    const res = await app.inject({
      method: "GET",
      url: "/v2/organizations/acme",
      headers: { authorization: "Bearer ann", origin: "http://elsewhere.test" },
    });
    expect(String(res.headers["access-control-expose-headers"])).toContain("RateLimit-Remaining");
  });
});

describe("with the rate limit off (RATE_LIMIT_PER_MINUTE=0)", () => {
  it("sends no rate-limit headers and never answers 429", async () => {
    const { app } = await buildTestApp(world());
    try {
      for (let i = 0; i < 250; i++) {
        const res = await app.inject({
          method: "GET",
          url: "/v2/organizations/acme",
          headers: { authorization: "Bearer ann" },
        });
        expect(res.statusCode).toBe(200);
        expect(Object.keys(res.headers).filter((h) => h.startsWith("ratelimit"))).toEqual([]);
      }
    } finally {
      await app.close();
    }
  });
});
