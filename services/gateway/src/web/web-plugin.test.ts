import type { FastifyInstance } from "fastify";
import { buildTestApp } from "../testing/test-app.js";
import { ASSETS, assetPath } from "./assets/assets.js";

let app: FastifyInstance;
beforeAll(async () => {
  ({ app } = await buildTestApp({ orgs: [], users: [], tokens: new Map(), revoked: [] }));
});
afterAll(() => app.close());

const HTML = { accept: "text/html,application/xhtml+xml,*/*;q=0.8" };

/** The nonce a Content-Security-Policy header allows scripts with. */
function cspNonce(csp: unknown): string {
  const match = /script-src 'self' 'nonce-([^']+)'/.exec(String(csp));
  if (!match?.[1]) throw new Error(`no nonce in ${String(csp)}`);
  return match[1];
}

function expectSecurityHeaders(headers: Record<string, unknown>) {
  const csp = String(headers["content-security-policy"]);
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("form-action 'self'");
  expect(csp).toContain("base-uri 'none'");
  expect(csp).not.toMatch(/https?:/);
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["referrer-policy"]).toBe("same-origin");
}

describe("assets", () => {
  it("serves each asset at its hashed path, cached for good, with its content type and the security headers", async () => {
    for (const [name, type] of [
      ["conveyor.css", "text/css; charset=utf-8"],
      ["conveyor.js", "text/javascript; charset=utf-8"],
      ["favicon.svg", "image/svg+xml"],
    ] as const) {
      const res = await app.inject({ url: assetPath(name) });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe(type);
      expect(res.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(res.body).toBe(ASSETS.get(name)?.body.toString("utf8"));
      expectSecurityHeaders(res.headers);
    }
  });

  it("answers 304 to the current ETag", async () => {
    const first = await app.inject({ url: assetPath("conveyor.css") });
    const again = await app.inject({
      url: assetPath("conveyor.css"),
      headers: { "if-none-match": first.headers.etag },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe("");
  });

  it("serves another hash's request with the current body, not cached, and an unknown name as the 404 page", async () => {
    const old = await app.inject({ url: "/assets/0123456789abcdef/conveyor.css" });
    expect(old.statusCode).toBe(200);
    expect(old.headers["cache-control"]).toBe("no-cache");
    const unknown = await app.inject({ url: "/assets/0123456789abcdef/nothing.css" });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers["content-type"]).toBe("text/html; charset=utf-8");
  });
});

describe("the site's root", () => {
  it("sends a browser to its dashboard and keeps Buildkite's hello for API clients", async () => {
    const page = await app.inject({ url: "/", headers: HTML });
    expect([page.statusCode, page.headers.location]).toEqual([302, "/dashboard"]);
    for (const headers of [{}, { accept: "*/*" }, { accept: "application/json, text/html" }]) {
      const hello = await app.inject({ url: "/", headers });
      expect(hello.statusCode).toBe(200);
      expect(hello.json()).toEqual({ message: "🛠", timestamp: expect.any(Number) });
    }
  });
});

describe("signed out", () => {
  it("sends a page that needs a person to sign in, with where to come back to", async () => {
    const res = await app.inject({ url: "/dashboard", headers: HTML });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe("/login?next=%2Fdashboard");
    expectSecurityHeaders(res.headers);
  });
});

describe("unknown URLs", () => {
  it("answers a browser with the styled 404 page, security headers and a nonce on every script", async () => {
    const res = await app.inject({ url: "/some/where/that/is/not/a/page", headers: HTML });
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expectSecurityHeaders(res.headers);
    expect(res.body).toContain("Page not found");
    expect(res.body).toContain(`href="${assetPath("conveyor.css")}"`);
    expect(res.body).toContain(`<link rel="icon" href="${assetPath("favicon.svg")}" type="image/svg+xml">`);
    const nonce = cspNonce(res.headers["content-security-policy"]);
    const scripts = res.body.match(/<script[^>]*>/g) ?? [];
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
  });

  it("gives each answer its own nonce", async () => {
    const a = await app.inject({ url: "/a/b/c/d/e", headers: HTML });
    const b = await app.inject({ url: "/a/b/c/d/e", headers: HTML });
    expect(cspNonce(a.headers["content-security-policy"])).not.toBe(cspNonce(b.headers["content-security-policy"]));
  });

  it("keeps the JSON 404 for clients that do not ask for HTML, for other methods, and for the APIs' paths", async () => {
    const cases = [
      { url: "/some/where/that/is/not/a/page", headers: {} },
      { url: "/some/where/that/is/not/a/page", headers: { accept: "application/json" } },
      { method: "POST" as const, url: "/some/where/that/is/not/a/page", headers: HTML },
      { url: "/v2", headers: HTML },
      { url: "/v2/nothing", headers: HTML },
      { url: "/v2/organizations/acme/nothing/here", headers: HTML },
      { url: "/v3", headers: HTML },
      { url: "/v3/nothing", headers: {} },
    ];
    for (const c of cases) {
      const res = await app.inject(c);
      expect([c.url, res.statusCode, res.headers["content-type"]]).toEqual([
        c.url,
        404,
        "application/json; charset=utf-8",
      ]);
      expect(res.json()).toEqual({ message: "Not Found" });
      expect(res.headers["content-security-policy"]).toBeUndefined();
    }
  });
});
