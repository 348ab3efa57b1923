import { Role } from "@conveyor/proto/identity";
import { send, stack, unique } from "../support/stack-env.js";
import {
  type Account,
  arrangeAccount,
  arrangeBuild,
  arrangePipeline,
  arrangeWebOrg,
  type Json,
  pathOf,
  type WebOrg,
} from "../support/web-world.js";

// The organization, pipeline and agents pages and the badge over HTTP against the running stack, as a plain client
// sees them (docs/pages.md#pages): data made with the REST API, people signed in through /login, every page's
// content in the server's HTML, the access policy, hostile text escaped, the new build form's CSRF protection, and
// the public badge.

const XSS = `<script>alert("pages")</script>`;
const XSS_ESCAPED = "&lt;script&gt;alert(&quot;pages&quot;)&lt;/script&gt;";

/** A request to the gateway, never following redirects. */
function page(path: string, init: RequestInit = {}) {
  return fetch(`${stack.apiUrl}${path}`, { redirect: "manual", ...init });
}

/** Signs a person in through the sign-in form, as a browser would; resolves with their session cookie. */
async function signIn(account: Account): Promise<string> {
  const form = await page("/login", { headers: { accept: "text/html" } });
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "";
  const loginCookie = form.headers.getSetCookie().find((c) => c.startsWith("conveyor_login_csrf=")) ?? "";
  const res = await page("/login", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: loginCookie.split(";")[0] ?? "",
      origin: stack.apiUrl,
    },
    body: new URLSearchParams({ _csrf: token, email: account.email, password: account.password }).toString(),
  });
  const session = res.headers.getSetCookie().find((c) => c.startsWith("conveyor_session="));
  if (res.status !== 303 || !session) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  return session.split(";")[0] ?? "";
}

/** A page as a signed-in person: its status, headers and HTML. */
async function html(path: string, cookie: string) {
  const res = await page(path, { headers: { accept: "text/html", cookie } });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

const STEPS = [{ command: "echo hi", label: `Say hi ${XSS}` }];

let org: WebOrg;
let member: Account;
let stranger: Account;
let pipeline: Json;
let adminCookie: string;
let memberCookie: string;

beforeAll(async () => {
  org = await arrangeWebOrg({ teamsEnabled: false, name: unique(`Pages ${XSS}`) });
  member = await arrangeAccount(org, { role: Role.MEMBER });
  const other = await arrangeWebOrg({ teamsEnabled: false });
  stranger = other.admin;
  pipeline = await arrangePipeline(org, {
    name: unique("Pages pipeline"),
    description: `Described ${XSS}`,
    steps: STEPS,
    defaultBranch: "main",
  });
  await arrangeBuild(org, pipeline.slug, { message: `First ${XSS}`, branch: "main" });
  await arrangeBuild(org, pipeline.slug, { message: "On a topic", branch: `topic-${unique("b")}` });
  [adminCookie, memberCookie] = await Promise.all([signIn(org.admin), signIn(member)]);
});

describe("the organization page", () => {
  it("opens at the organization's web_url, with its pipelines, their latest builds and bars, every text escaped", async () => {
    // The organization's web_url is the pipeline's without its last segment.
    const orgPath = pathOf(pipeline.web_url).replace(/\/[^/]+$/, "");
    expect(orgPath).toBe(`/${org.slug}`);
    const res = await html(orgPath, memberCookie);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toMatch(/^default-src 'none'; script-src 'self' 'nonce-/);
    expect(res.body).toContain(`href="${pathOf(pipeline.web_url)}"`);
    expect(res.body).toContain(`Described ${XSS_ESCAPED}`);
    expect(res.body).toContain(`<a href="${pathOf(pipeline.web_url)}/builds/1">#1</a>`);
    expect(res.body.match(/class="bar state-/g)).toHaveLength(2);
    expect(res.body).not.toContain(XSS);
  });

  it("is 404 for a person of another organization, and sends a signed-out one to sign in", async () => {
    const strangerCookie = await signIn(stranger);
    const res = await html(`/${org.slug}`, strangerCookie);
    expect(res.status).toBe(404);
    expect(res.body).not.toContain(pipeline.slug);
    const out = await page(`/${org.slug}`, { headers: { accept: "text/html" } });
    expect([out.status, out.headers.get("location")]).toEqual([302, `/login?next=%2F${org.slug}`]);
  });
});

describe("the pipeline page", () => {
  it("opens at the pipeline's web_url with its builds newest first, filtered by state and branch", async () => {
    const res = await html(pathOf(pipeline.web_url), memberCookie);
    expect(res.status).toBe(200);
    const numbers = [...res.body.matchAll(/class="build-number" href="[^"]+">#(\d+)</g)].map((m) => Number(m[1]));
    expect(numbers.slice(-2)).toEqual([2, 1]);
    expect(res.body).toContain(`First ${XSS_ESCAPED}`);
    expect(res.body).not.toContain(XSS);
    const main = await html(`${pathOf(pipeline.web_url)}?branch=main`, memberCookie);
    expect(main.body).toContain("First ");
    expect(main.body).not.toContain("On a topic");
  });

  it("creates a build from the new build form as the person, with source ui, and refuses one without the token", async () => {
    const before = await html(pathOf(pipeline.web_url), memberCookie);
    const token = /name="_csrf" value="([^"]+)"/.exec(before.body)?.[1] ?? "";
    expect(token).not.toBe("");
    const form = {
      message: `From the page ${XSS}`,
      commit: "HEAD",
      branch: "main",
      env: "GREETING=hello",
      meta_data: "",
    };
    const post = (body: Record<string, string>) =>
      page(`${pathOf(pipeline.web_url)}/builds`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: memberCookie, origin: stack.apiUrl },
        body: new URLSearchParams(body).toString(),
      });
    const forged = await post(form);
    expect(forged.status).toBe(403);
    const res = await post({ ...form, _csrf: token });
    expect(res.status).toBe(303);
    const number = Number(/\/builds\/(\d+)$/.exec(res.headers.get("location") ?? "")?.[1]);
    const build = await send(
      "GET",
      `/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${number}`,
      org.admin.secret,
    );
    expect(build.body).toMatchObject({
      message: `From the page ${XSS}`,
      branch: "main",
      source: "ui",
      env: { GREETING: "hello" },
      creator: { id: member.id },
    });
    // A commit the builds service refuses comes back on the form with the person's input.
    const refused = await post({ ...form, commit: "", _csrf: token });
    expect(refused.status).toBe(422);
    const body = await refused.text();
    expect(body).toContain('<div class="form-errors" role="alert"');
    expect(body).toContain(`value="From the page ${XSS_ESCAPED}"`);
  });
});

describe("the agents pages", () => {
  it("list the organization's agents, and an unknown agent is 404", async () => {
    const res = await html(`/organizations/${org.slug}/agents`, adminCookie);
    expect(res.status).toBe(200);
    expect(res.body).toContain("<h1>Agents</h1>");
    const none = await html(`/organizations/${org.slug}/agents/00000000-0000-4000-8000-000000000000`, adminCookie);
    expect(none.status).toBe(404);
  });
});

describe("the badge", () => {
  it("is public at the pipeline's badge_url, cacheable, and 404 with the unknown badge for an unknown token", async () => {
    const res = await fetch(pipeline.badge_url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=30");
    const svg = await res.text();
    expect(svg).toMatch(/aria-label="build: (passing|failing|running|unknown)"/);
    expect(svg).not.toContain(pipeline.slug);
    const unknown = await fetch(`${stack.apiUrl}/badges/${"0".repeat(48)}.svg`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("build: unknown");
  });
});
