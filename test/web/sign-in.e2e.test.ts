import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { Role } from "@conveyor/proto/identity";
import { runCiAdmin } from "../support/ci-admin.js";
import { arrangeOrgUser, identity, stack, unique } from "../support/stack-env.js";

// Signing in over HTTP against the running stack, as a plain client sees it (docs/pages.md#signing-in): a password
// set through ci-admin, the session cookie and its attributes, a page that needs a person, signing out, a one-time
// link, the failure limit per account, the same answer for an unknown email, and the REST API's refusal of the
// session cookie (it stays token-only).

const PASSWORD = "a long enough password";

const ciAdmin = (args: string[], stdin?: string) => runCiAdmin(args, stdin);

/** The cookies a response sets: each one's value and its attributes as written. */
function setCookies(res: Response): Map<string, { value: string; attributes: string[] }> {
  const cookies = new Map<string, { value: string; attributes: string[] }>();
  for (const header of res.headers.getSetCookie()) {
    const [pair = "", ...attributes] = header.split(/;\s*/);
    const eq = pair.indexOf("=");
    cookies.set(pair.slice(0, eq), { value: decodeURIComponent(pair.slice(eq + 1)), attributes });
  }
  return cookies;
}

/** A request to the pages, never following redirects (their targets are what is checked). */
function page(path: string, init: RequestInit = {}) {
  return fetch(`${stack.apiUrl}${path}`, { redirect: "manual", ...init });
}

/** Posts the sign-in form as a browser on the site would: with the form's token and its cookie. */
async function signIn(email: string, password: string, next?: string) {
  const form = await page("/login", { headers: { accept: "text/html" } });
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  const tokenCookie = setCookies(form).get("conveyor_login_csrf")?.value ?? "";
  const res = await page("/login", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: `conveyor_login_csrf=${tokenCookie}`,
      origin: stack.apiUrl,
    },
    body: new URLSearchParams({ _csrf: token, email, password, ...(next ? { next } : {}) }).toString(),
  });
  const session = setCookies(res).get("conveyor_session");
  return { res, text: await res.text(), session, cookie: session ? `conveyor_session=${session.value}` : "" };
}

/** Opens a one-time link as a browser does (a page with a button), then presses the button. */
async function useLink(path: string) {
  const opened = await page(path, { headers: { accept: "text/html" } });
  const text = await opened.text();
  const token = /name="_csrf" value="([^"]+)"/.exec(text)?.[1] ?? "";
  const tokenCookie = setCookies(opened).get("conveyor_login_csrf")?.value ?? "";
  const used = await page(path, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: `conveyor_login_csrf=${tokenCookie}`,
      origin: stack.apiUrl,
    },
    body: new URLSearchParams({ _csrf: token }).toString(),
  });
  return { opened, text, used };
}

/** A person in a new organization, with a password set through ci-admin (read from stdin). */
async function arrangePerson() {
  const { organization, user } = await arrangeOrgUser({ scopes: ["read_organizations"], role: Role.MEMBER });
  const set = await ciAdmin(["user", "set-password", "--email", user.email], `${PASSWORD}\n`);
  expect(set).toMatchObject({ code: 0, json: { user_id: user.id, password_set: true } });
  return { organization, user };
}

/**
 * Waits, if need be, for a new failure window, so that a test's failures all fall in one (identity counts them per
 * fixed window of SIGN_IN_WINDOW_MINUTES, 15 by default).
 */
async function awayFromWindowEnd() {
  const windowMs = 15 * 60_000;
  const left = windowMs - (Date.now() % windowMs);
  if (left < 30_000) await sleep(left + 1_000);
}

describe("signing in to the pages", () => {
  it("with a password set through ci-admin: an HttpOnly, SameSite=Lax session cookie opens the pages", async () => {
    const { organization, user } = await arrangePerson();
    const signedOut = await page(`/${organization.slug}`, { headers: { accept: "text/html" } });
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get("location")).toBe(`/login?next=%2F${organization.slug}`);

    const { res, session, cookie } = await signIn(user.email, PASSWORD, `/${organization.slug}`);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/${organization.slug}`);
    expect(session?.value).toMatch(/^cvs_[0-9a-f]{40}$/);
    const attributes = session?.attributes.map((a) => a.toLowerCase()) ?? [];
    expect(attributes).toEqual(expect.arrayContaining(["httponly", "samesite=lax", "path=/"]));
    // The stack is served over http: the cookie is not Secure there (it is behind https, or with an https WEB_URL).
    expect(attributes).not.toContain("secure");
    const maxAge = Number(attributes.find((a) => a.startsWith("max-age="))?.slice(8));
    expect(maxAge).toBeGreaterThan(29 * 24 * 3600);

    const orgPage = await page(`/${organization.slug}`, { headers: { accept: "text/html", cookie } });
    expect(orgPage.status).toBe(200);
    expect(await orgPage.text()).toContain(user.name);
    const dashboard = await page("/dashboard", { headers: { cookie } });
    expect(dashboard.headers.get("location")).toBe(`/${organization.slug}`);
  });

  it("signing out ends the session, for this gateway and for identity", async () => {
    const { organization, user } = await arrangePerson();
    const { cookie, session } = await signIn(user.email, PASSWORD);
    const orgPage = await (await page(`/${organization.slug}`, { headers: { cookie } })).text();
    const token = /action="\/logout">\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(orgPage)?.[1];
    expect(token).toBeDefined();
    // Without the page's token, a sign-out (a forged post) is refused and the session goes on.
    const forged = await page("/logout", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: "",
    });
    expect(forged.status).toBe(403);
    expect((await page(`/${organization.slug}`, { headers: { cookie } })).status).toBe(200);

    const out = await page("/logout", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: stack.apiUrl },
      body: new URLSearchParams({ _csrf: token ?? "" }).toString(),
    });
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("/login");
    expect(setCookies(out).get("conveyor_session")?.value).toBe("");
    const after = await page(`/${organization.slug}`, { headers: { cookie } });
    expect(after.status).toBe(302);
    await expect(identity.authenticateSession({ secret: session?.value ?? "" })).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
  });

  it("with a one-time link from ci-admin, which works once", async () => {
    const { organization, user } = await arrangePerson();
    const made = await ciAdmin(["user", "login-link", "--email", user.email, "--minutes", "5"]);
    expect(made.code).toBe(0);
    expect(made.json.url).toMatch(new RegExp(`^${stack.apiUrl}/login/link/cvl_[0-9a-f]{40}$`));
    const path = new URL(made.json.url).pathname;
    // Opening the link signs nobody in (a link preview cannot use it up): its button does.
    const { opened, text, used: first } = await useLink(path);
    expect(opened.status).toBe(200);
    expect(setCookies(opened).has("conveyor_session")).toBe(false);
    expect(text).toContain(`action="${path}"`);
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/dashboard");
    const cookie = `conveyor_session=${setCookies(first).get("conveyor_session")?.value}`;
    expect((await page("/dashboard", { headers: { cookie } })).headers.get("location")).toBe(`/${organization.slug}`);
    const { used: again } = await useLink(path);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain("This sign-in link can't be used");
    expect(setCookies(again).has("conveyor_session")).toBe(false);
  });

  it("locks an account after ten wrong passwords for the window, while another account still signs in", async () => {
    await awayFromWindowEnd();
    const ann = await arrangePerson();
    const bob = await arrangePerson();
    for (let i = 0; i < 10; i++) {
      const wrong = await signIn(ann.user.email, `wrong password ${i}`);
      expect([i, wrong.res.status]).toEqual([i, 401]);
    }
    const locked = await signIn(ann.user.email, PASSWORD);
    expect(locked.res.status).toBe(429);
    expect(locked.text).toMatch(/Too many failed sign-ins for this account\. Try again after \d\d:\d\d UTC/);
    expect(locked.session).toBeUndefined();
    const other = await signIn(bob.user.email, PASSWORD);
    expect(other.res.status).toBe(303);
    expect(other.session?.value).toMatch(/^cvs_/);
  });

  it("answers an unknown email exactly as a wrong password", async () => {
    const { user } = await arrangePerson();
    const wrong = await signIn(user.email, "not the password");
    const unknown = await signIn(`${unique("nobody")}@example.com`, "not the password");
    expect(wrong.res.status).toBe(401);
    expect(unknown.res.status).toBe(401);
    const message = (text: string) => /<div class="form-errors" role="alert"><p>([^<]*)<\/p>/.exec(text)?.[1];
    expect(message(unknown.text)).toBe(message(wrong.text));
    expect(message(wrong.text)).toBe("The email address or password is wrong");
  });

  it("gives the REST API nothing: a session cookie is not a token", async () => {
    const { organization, user } = await arrangePerson();
    const { cookie } = await signIn(user.email, PASSWORD);
    expect(cookie).not.toBe("");
    for (const path of ["/v2/organizations", `/v2/organizations/${organization.slug}`, "/v2/access-token"]) {
      const res = await fetch(`${stack.apiUrl}${path}`, { headers: { cookie } });
      expect([path, res.status]).toEqual([path, 401]);
    }
  });

  it("refuses a sign-in form posted from another site", async () => {
    const { user } = await arrangePerson();
    const form = await page("/login");
    const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
    const res = await page("/login", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: `conveyor_login_csrf=${setCookies(form).get("conveyor_login_csrf")?.value}`,
        origin: "https://evil.example",
      },
      body: new URLSearchParams({ _csrf: token, email: user.email, password: PASSWORD }).toString(),
    });
    expect(res.status).toBe(403);
    expect(setCookies(res).has("conveyor_session")).toBe(false);
  });

  it("ends every session of a user through ci-admin", async () => {
    const { organization, user } = await arrangePerson();
    const { cookie } = await signIn(user.email, PASSWORD);
    expect(await ciAdmin(["user", "sign-out", "--email", user.email])).toMatchObject({
      code: 0,
      json: { user_id: user.id, sessions_ended: 1 },
    });
    // Identity's session_ended reaches the gateway over NATS: soon, not necessarily before this request.
    for (let i = 0; i < 50; i++) {
      if ((await page(`/${organization.slug}`, { headers: { cookie } })).status === 302) return;
      await sleep(100);
    }
    throw new Error("the ended session still opens the pages after 5 s");
  });
});
