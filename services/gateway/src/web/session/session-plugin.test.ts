import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Principal, PrincipalSchema, Role } from "@conveyor/proto/identity";
import { ALL_SCOPES } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../../testing/test-app.js";
import { CSRF_REFUSED, sessionCsrfToken } from "./csrf.js";
import { LOGIN_CSRF_COOKIE, SESSION_COOKIE } from "./session-cookie.js";

const PASSWORD = "right password!";
const WRONG = "The email address or password is wrong";
const LOCKED = "Too many failed sign-ins for this account. Try again after 10:15 UTC (2026-03-01T10:15:00Z).";
const acme = makeOrg("acme", "Acme");
const HTML = { accept: "text/html" };
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/**
 * An identity fake with sessions: ann@example.com signs in with PASSWORD (locked@example.com is always over the
 * limit), a link "cvl_good" works once, and sessions resolve to Ann's principal as a session's, until ended.
 */
function fakeSessions(orgs: Array<[ReturnType<typeof makeOrg>, Role]> = [[acme, Role.MEMBER]]) {
  const ann = makeUser(1, "Ann");
  const sessions = new Map<string, Principal>();
  const links = new Set(["cvl_good"]);
  const calls: Array<{ rpc: string; req: Record<string, unknown> }> = [];
  let n = 0;
  const start = () => {
    n += 1;
    const secret = `cvs_secret_${n}`;
    const principal = create(PrincipalSchema, makePrincipal(ann, [...ALL_SCOPES], orgs));
    if (principal.token) principal.token.id = `session:s${n}`;
    sessions.set(secret, principal);
    const expiresAt = timestampFromDate(new Date(Date.now() + 30 * 24 * 3600_000));
    return { secret, session: { id: `s${n}`, userId: ann.id, expiresAt } };
  };
  const identity = {
    signInWithPassword(req: { email: string; password: string; clientAddress: string }) {
      calls.push({ rpc: "signInWithPassword", req });
      if (req.email === "locked@example.com") throw new ConnectError(LOCKED, Code.ResourceExhausted);
      if (req.email !== "ann@example.com" || req.password !== PASSWORD) {
        throw new ConnectError(WRONG, Code.Unauthenticated);
      }
      return start();
    },
    signInWithLink(req: { secret: string }) {
      calls.push({ rpc: "signInWithLink", req });
      if (!links.delete(req.secret)) throw new ConnectError("unusable", Code.Unauthenticated);
      return start();
    },
    authenticateSession(req: { secret: string }) {
      calls.push({ rpc: "authenticateSession", req });
      const principal = sessions.get(req.secret);
      if (!principal) throw new ConnectError("ended", Code.Unauthenticated);
      return { principal };
    },
    endSession(req: { secret: string }) {
      calls.push({ rpc: "endSession", req });
      sessions.delete(req.secret);
      return {};
    },
  };
  return { identity, sessions, calls };
}

async function world(orgs?: Array<[ReturnType<typeof makeOrg>, Role]>) {
  const fake = fakeSessions(orgs);
  const { app } = await buildTestApp({ orgs: [acme], users: [], tokens: new Map(), revoked: [] }, fake);
  apps.push(app);
  return { app, ...fake };
}

const apps: FastifyInstance[] = [];
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

type Res = Awaited<ReturnType<FastifyInstance["inject"]>>;
const cookieOf = (res: Res, name: string) => res.cookies.find((c) => c.name === name);

/** The sign-in form's token and its cookie, as a browser gets them from GET /login. */
async function loginForm(app: FastifyInstance, url = "/login") {
  const res = await app.inject({ url, headers: HTML });
  const token = /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1] ?? "";
  return { res, token, cookie: `${LOGIN_CSRF_COOKIE}=${cookieOf(res, LOGIN_CSRF_COOKIE)?.value ?? ""}` };
}

/** Posts the sign-in form as a browser would, from the site itself. */
async function signIn(app: FastifyInstance, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const form = await loginForm(app);
  return app.inject({
    method: "POST",
    url: "/login",
    headers: { ...FORM, cookie: form.cookie, "sec-fetch-site": "same-origin", origin: "http://web.test", ...headers },
    payload: new URLSearchParams({ _csrf: form.token, ...fields }).toString(),
  });
}

/** Signs Ann in; returns the session cookie's header value and secret. */
async function signedIn(app: FastifyInstance) {
  const res = await signIn(app, { email: "ann@example.com", password: PASSWORD });
  const secret = cookieOf(res, SESSION_COOKIE)?.value ?? "";
  return { secret, cookie: `${SESSION_COOKIE}=${secret}` };
}

describe("the sign-in page", () => {
  it("is a form posting email and password to /login with the sign-in token, kept in an HttpOnly cookie", async () => {
    const { app } = await world();
    const { res, token } = await loginForm(app, "/login?next=%2Facme%2Fweb%3Fbranch%3D%22%3E%3Cscript%3E");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(res.body).toContain('<form class="stacked" method="post" action="/login">');
    expect(res.body).toContain('name="password" type="password" autocomplete="current-password"');
    // The page asked for is kept, escaped.
    expect(res.body).toContain('name="next" value="/acme/web?branch=%22%3E%3Cscript%3E"');
    expect(res.body).not.toContain("<script>");
    const cookie = cookieOf(res, LOGIN_CSRF_COOKIE);
    expect(cookie).toMatchObject({ value: token, httpOnly: true, sameSite: "Lax", path: "/login" });
    expect(token.length).toBeGreaterThanOrEqual(32);
  });

  it("sends a signed-in person on to the page asked for", async () => {
    const { app } = await world();
    const { cookie } = await signedIn(app);
    const res = await app.inject({ url: "/login?next=/acme", headers: { ...HTML, cookie } });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe("/acme");
  });
});

describe("signing in with a password", () => {
  it("sets the session cookie (HttpOnly, SameSite=Lax, Path=/, until the session's end) and goes to next", async () => {
    const { app, calls } = await world();
    const res = await signIn(app, { email: "ann@example.com", password: PASSWORD, next: "/acme/web?branch=main" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/acme/web?branch=main");
    expect(res.headers["cache-control"]).toBe("no-store");
    const session = cookieOf(res, SESSION_COOKIE);
    expect(session).toMatchObject({ value: "cvs_secret_1", httpOnly: true, sameSite: "Lax", path: "/" });
    expect(session?.secure).toBeUndefined();
    expect(session?.maxAge).toBeGreaterThan(29 * 24 * 3600);
    expect(session?.maxAge).toBeLessThanOrEqual(30 * 24 * 3600);
    // The sign-in token is spent.
    expect(cookieOf(res, LOGIN_CSRF_COOKIE)).toMatchObject({ value: "", path: "/login" });
    expect(calls.find((c) => c.rpc === "signInWithPassword")?.req).toMatchObject({
      email: "ann@example.com",
      clientAddress: "127.0.0.1",
    });
  });

  it("goes to the dashboard when next is not a path of this site", async () => {
    const { app } = await world();
    for (const next of ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"]) {
      const res = await signIn(app, { email: "ann@example.com", password: PASSWORD, next });
      expect([next, res.headers.location]).toEqual([next, "/dashboard"]);
    }
  });

  it("answers a wrong password with the form again (401), the email kept, and no session", async () => {
    const { app } = await world();
    const res = await signIn(app, { email: "ann@example.com", password: "nope", next: "/acme" });
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain(`<div class="form-errors" role="alert"><p>${WRONG}</p></div>`);
    expect(res.body).toContain('value="ann@example.com"');
    expect(res.body).toContain('name="next" value="/acme"');
    expect(cookieOf(res, SESSION_COOKIE)).toBeUndefined();
  });

  it("answers too many failures with the form (429) saying when to try again", async () => {
    const { app } = await world();
    const res = await signIn(app, { email: "locked@example.com", password: PASSWORD });
    expect(res.statusCode).toBe(429);
    expect(res.body).toContain(LOCKED);
  });

  it.each([
    ["no token", { _csrf: "" }, {}],
    ["a token that is not its cookie's", { _csrf: "forged-token-forged-token-forged" }, {}],
    ["another site's Origin", {}, { origin: "https://evil.example" }],
    ["a cross-site fetch", {}, { "sec-fetch-site": "cross-site" }],
    ["a same-site (not same-origin) fetch", {}, { "sec-fetch-site": "same-site" }],
  ])("refuses a post with %s (403 page), signing no one in", async (_what, fields, headers) => {
    const { app, calls } = await world();
    const res = await signIn(app, { email: "ann@example.com", password: PASSWORD, ...fields }, headers);
    expect(res.statusCode).toBe(403);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain(CSRF_REFUSED);
    expect(cookieOf(res, SESSION_COOKIE)).toBeUndefined();
    expect(calls.filter((c) => c.rpc === "signInWithPassword")).toEqual([]);
  });

  it("ends the session the browser had when someone signs in again", async () => {
    const { app, sessions } = await world();
    const first = await signedIn(app);
    const form = await loginForm(app);
    await app.inject({
      method: "POST",
      url: "/login",
      headers: { ...FORM, cookie: `${first.cookie}; ${form.cookie}`, origin: "http://web.test" },
      payload: new URLSearchParams({ _csrf: form.token, email: "ann@example.com", password: PASSWORD }).toString(),
    });
    expect(sessions.has(first.secret)).toBe(false);
    expect(sessions.size).toBe(1);
  });
});

describe("sessions on the pages", () => {
  it("make the person the request's principal; without one a page sends them to sign in and back", async () => {
    const { app } = await world();
    const out = await app.inject({ url: "/dashboard", headers: HTML });
    expect(out.statusCode).toBe(302);
    expect(out.headers.location).toBe("/login?next=%2Fdashboard");
    const { cookie } = await signedIn(app);
    const res = await app.inject({ url: "/dashboard", headers: { ...HTML, cookie } });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe("/acme");
  });

  it("forget a cookie whose session ended elsewhere, and the person is signed out", async () => {
    const { app } = await world();
    const res = await app.inject({ url: "/dashboard", headers: { ...HTML, cookie: `${SESSION_COOKIE}=cvs_unknown` } });
    expect(res.headers.location).toBe("/login?next=%2Fdashboard");
    expect(cookieOf(res, SESSION_COOKIE)).toMatchObject({ value: "", path: "/" });
  });

  it("put the session's CSRF token in the pages' forms (the shell's sign-out button among them)", async () => {
    const { app } = await world([]);
    const { cookie, secret } = await signedIn(app);
    const res = await app.inject({ url: "/dashboard", headers: { ...HTML, cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`<input type="hidden" name="_csrf" value="${sessionCsrfToken(secret)}">`);
    expect(res.body).not.toContain(secret);
  });

  it("are not credentials of the REST API, which stays token-only", async () => {
    const { app } = await world();
    const { cookie } = await signedIn(app);
    const res = await app.inject({ url: "/v2/organizations", headers: { cookie } });
    expect(res.statusCode).toBe(401);
    expect(res.headers["content-type"]).toContain("application/json");
  });
});

describe("signing out", () => {
  it("ends the session with the session's token, forgets it at once, and clears the cookie", async () => {
    const { app, calls } = await world([]);
    const { cookie, secret } = await signedIn(app);
    // Cached by this gateway now.
    expect((await app.inject({ url: "/dashboard", headers: { ...HTML, cookie } })).statusCode).toBe(200);
    const res = await app.inject({
      method: "POST",
      url: "/logout",
      headers: { ...FORM, cookie, origin: "http://web.test" },
      payload: new URLSearchParams({ _csrf: sessionCsrfToken(secret) }).toString(),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/login");
    expect(cookieOf(res, SESSION_COOKIE)).toMatchObject({ value: "", path: "/" });
    expect(calls.filter((c) => c.rpc === "endSession").map((c) => c.req.secret)).toEqual([secret]);
    const after = await app.inject({ url: "/dashboard", headers: { ...HTML, cookie } });
    expect(after.headers.location).toBe("/login?next=%2Fdashboard");
  });

  it("refuses a sign-out without the session's token (a forged post), and the session goes on", async () => {
    const { app, calls } = await world([]);
    const { cookie, secret } = await signedIn(app);
    for (const payload of ["", `_csrf=${sessionCsrfToken("cvs_another")}`]) {
      const res = await app.inject({ method: "POST", url: "/logout", headers: { ...FORM, cookie }, payload });
      expect(res.statusCode).toBe(403);
    }
    const fromElsewhere = await app.inject({
      method: "POST",
      url: "/logout",
      headers: { ...FORM, cookie, origin: "https://evil.example" },
      payload: `_csrf=${sessionCsrfToken(secret)}`,
    });
    expect(fromElsewhere.statusCode).toBe(403);
    expect(calls.filter((c) => c.rpc === "endSession")).toEqual([]);
    expect((await app.inject({ url: "/dashboard", headers: { ...HTML, cookie } })).statusCode).toBe(200);
  });

  it("sends a signed-out person's sign-out to the sign-in page", async () => {
    const { app } = await world();
    const res = await app.inject({ method: "POST", url: "/logout", headers: FORM, payload: "" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/login");
  });
});

describe("sign-in links", () => {
  /** Opens a link as a browser does, then presses its button. */
  async function useLink(app: FastifyInstance, url: string) {
    const form = await loginForm(app, url);
    const used = await app.inject({
      method: "POST",
      url,
      headers: { ...FORM, cookie: form.cookie, "sec-fetch-site": "same-origin", origin: "http://web.test" },
      payload: new URLSearchParams({ _csrf: form.token }).toString(),
    });
    return { form, used };
  }

  it("opening a link signs nobody in: it shows a button, and only its POST uses the link", async () => {
    const { app, calls } = await world();
    const opened = await app.inject({ url: "/login/link/cvl_good", headers: HTML });
    expect(opened.statusCode).toBe(200);
    expect(opened.headers["referrer-policy"]).toBe("same-origin");
    expect(opened.body).toContain('<form class="stacked" method="post" action="/login/link/cvl_good">');
    expect(cookieOf(opened, SESSION_COOKIE)).toBeUndefined();
    expect(calls.filter((c) => c.rpc === "signInWithLink")).toEqual([]);
    // A POST without the page's token (a cross-site form) is refused and uses nothing.
    const forged = await app.inject({ method: "POST", url: "/login/link/cvl_good", headers: FORM, payload: "" });
    expect(forged.statusCode).toBe(403);
    expect(calls.filter((c) => c.rpc === "signInWithLink")).toEqual([]);
  });

  it("sign in once and go to the dashboard; a used link shows a page saying so", async () => {
    const { app } = await world();
    const { used: res } = await useLink(app, "/login/link/cvl_good");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/dashboard");
    expect(res.headers["referrer-policy"]).toBe("no-referrer");
    expect(cookieOf(res, SESSION_COOKIE)?.value).toMatch(/^cvs_/);
    const { used: again } = await useLink(app, "/login/link/cvl_good");
    expect(again.statusCode).toBe(410);
    expect(again.body).toContain("This sign-in link can't be used");
    expect(again.headers["referrer-policy"]).toBe("no-referrer");
    expect(cookieOf(again, SESSION_COOKIE)).toBeUndefined();
  });
});
