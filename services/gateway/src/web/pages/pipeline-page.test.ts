import { bob, hidden, pagesWorld, XSS, XSS_ESCAPED } from "../../testing/pages-world.js";

let world: Awaited<ReturnType<typeof pagesWorld>>;
beforeAll(async () => {
  world = await pagesWorld();
});
afterAll(() => world.app.close());

/** The build numbers a page lists, in order. */
const numbers = (body: string) =>
  [...body.matchAll(/class="build-number" href="[^"]+">#(\d+)</g)].map((m) => Number(m[1]));

describe("GET /{org}/{pipeline}", () => {
  it("lists the pipeline's builds newest first, 30 a page, with the link to older ones", async () => {
    const res = await world.as("bob", { url: "/acme/web" });
    expect(res.statusCode).toBe(200);
    expect(numbers(res.body)).toEqual(Array.from({ length: 30 }, (_, i) => 35 - i));
    expect(res.body).toContain('rel="next" href="/acme/web?page=2"');
    const older = await world.as("bob", { url: "/acme/web?page=2" });
    expect(numbers(older.body)).toEqual([5, 4, 3, 2, 1]);
    expect(older.body).toContain('rel="prev" href="/acme/web"');
    expect(older.body).not.toContain('rel="next"');
  });

  it("shows each build's state, message, branch, commit, creator and duration, every text escaped", async () => {
    const res = await world.as("bob", { url: "/acme/web" });
    expect(res.body).toContain('<span class="state state-failed">failed</span>');
    expect(res.body).toContain(`Build 35 ${XSS_ESCAPED}`);
    expect(res.body).toContain(`<code>feature ${XSS_ESCAPED}</code>`);
    expect(res.body).toContain("<code>0123456</code>");
    expect(res.body).toContain("45s");
    expect(res.body).not.toContain(XSS);
  });

  it("filters by branch, state and the person's own builds, keeping the filters in the form and the pager", async () => {
    const byState = await world.as("bob", { url: "/acme/web?state=running" });
    expect(numbers(byState.body)).toEqual([32, 25, 18, 11, 4]);
    expect(byState.body).toContain('<option value="running" selected>');
    const byBranch = await world.as("bob", { url: `/acme/web?branch=${encodeURIComponent(`feature ${XSS}`)}` });
    expect(numbers(byBranch.body)).toEqual([35]);
    expect(byBranch.body).toContain(`value="feature ${XSS_ESCAPED}"`);
    const last = world.calls.listBuilds.at(-1);
    expect(last?.branches).toEqual([`feature ${XSS}`]);
    const mine = await world.as("bob", { url: "/acme/web?mine=true" });
    expect(world.calls.listBuilds.at(-1)?.creatorId).toBe(bob.id);
    expect(numbers(mine.body)).toEqual([]);
    expect(mine.body).toContain("No builds match these filters.");
    expect(mine.body).toContain('name="mine" value="true" checked');
  });

  it("refuses an unknown state with the 400 page", async () => {
    const res = await world.as("bob", { url: "/acme/web?state=bogus" });
    expect([res.statusCode, res.headers["content-type"]]).toEqual([400, "text/html; charset=utf-8"]);
  });

  it("shows the new build form to people who may build, with the CSRF token, and not to readers", async () => {
    const bobs = await world.as("bob", { url: "/acme/web" });
    expect(bobs.body).toContain('<form class="stacked" method="post" action="/acme/web/builds">');
    expect(bobs.body).toMatch(/<input type="hidden" name="_csrf" value="[^"]+">/);
    expect(bobs.body).toContain('name="branch" value="main"');
    const ritas = await world.as("rita", { url: "/teamsorg/app" });
    expect(ritas.statusCode).toBe(200);
    expect(ritas.body).not.toContain("New build");
    expect(ritas.body).not.toContain('method="post" action="/teamsorg/app/builds"');
  });

  it("answers 404 for a pipeline the person may not read, or that does not exist, as REST does", async () => {
    for (const url of [`/teamsorg/${hidden.slug}`, "/acme/nothing", "/elsewhere/web"]) {
      const res = await world.as("rita", { url });
      expect([url, res.statusCode]).toEqual([url, 404]);
      expect(res.body).not.toContain("hidden build");
    }
  });
});
