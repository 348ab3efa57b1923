import {
  acme,
  api,
  app,
  elsewhere,
  hidden,
  pagesWorld,
  teamsOrg,
  web,
  XSS,
  XSS_ESCAPED,
} from "../../testing/pages-world.js";

let world: Awaited<ReturnType<typeof pagesWorld>>;
beforeAll(async () => {
  world = await pagesWorld();
});
afterAll(() => world.app.close());

/** The <li class="pipeline-row"> of a pipeline in a page. */
function rowOf(body: string, slug: string): string {
  const rows = body.split('<li class="pipeline-row"').slice(1);
  const row = rows.find((r) => r.includes(`href="/${slug.split("/")[0]}`) && r.includes(`/${slug}"`));
  if (!row) throw new Error(`no row for ${slug}`);
  return row;
}

describe("GET /{org}", () => {
  it("sends a signed-out person to sign in, coming back here", async () => {
    const res = await world.as(null, { url: "/acme?name=w" });
    expect([res.statusCode, res.headers.location]).toEqual([302, "/login?next=%2Facme%3Fname%3Dw"]);
  });

  it("lists the organization's pipelines with the default branch's latest build and the last 30 builds as bars", async () => {
    const res = await world.as("bob", { url: "/acme" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    const webRow = rowOf(res.body, "acme/web");
    // Build 35 is the newest but on a feature branch: the default branch's latest is 34 (passed).
    expect(webRow).toContain('<a href="/acme/web/builds/34">#34</a>');
    expect(webRow.match(/class="bar /g)).toHaveLength(30);
    // Oldest on the left: builds 6 to 35.
    const bars = [...webRow.matchAll(/class="bar (state-\w+)" href="\/acme\/web\/builds\/(\d+)"/g)];
    expect(bars.map((m) => Number(m[2]))).toEqual(Array.from({ length: 30 }, (_, i) => i + 6));
    expect(bars.at(-1)?.[1]).toBe("state-failed");
    expect(bars.find((m) => m[2] === "11")?.[1]).toBe("state-running");
    // A pipeline without a default branch shows its latest build of any branch.
    expect(rowOf(res.body, "acme/api")).toContain('<a href="/acme/api/builds/1">#1</a>');
    expect(res.body).toContain("2 pipelines");
  });

  it("reads every pipeline's builds in one ReadBuilds call and the pipelines in one ListPipelines call", async () => {
    const before = { pipelines: world.calls.listPipelines, reads: world.calls.readBuilds.length };
    await world.as("bob", { url: "/acme" });
    expect(world.calls.listPipelines - before.pipelines).toBe(1);
    const reads = world.calls.readBuilds.slice(before.reads);
    expect(reads).toHaveLength(1);
    // web: its last 30 and its default branch's latest; api (no default branch): its last 30 only.
    expect(
      reads[0]?.reads.map((r) => (r.read.case === "list" ? [r.read.value.pipelineId, r.read.value.perPage] : [])),
    ).toEqual([
      [api.id, 30],
      [web.id, 30],
      [web.id, 1],
    ]);
    expect(reads[0]?.reads.every((r) => r.read.case === "list" && r.read.value.excludeJobs)).toBe(true);
  });

  it("asks for each list with the version it holds, and shows a changed build at once", async () => {
    const w = await pagesWorld();
    try {
      const first = await w.as("bob", { url: "/acme" });
      const again = await w.as("bob", { url: "/acme" });
      const [firstRead, secondRead] = w.calls.readBuilds;
      expect(firstRead?.reads.every((r) => r.read.case === "list" && r.read.value.ifNoneMatch === "")).toBe(true);
      expect(secondRead?.reads.every((r) => r.read.case === "list" && r.read.value.ifNoneMatch !== "")).toBe(true);
      // The same page, from the lists kept, once the builds service said they had not changed.
      const strip = (body: string) => body.replace(/nonce="[^"]+"/g, "").replace(/name="_csrf" value="[^"]+"/g, "");
      expect(strip(again.body)).toBe(strip(first.body));
      // A build that changes changes its list's version: the page shows it at once.
      const newest = w.builds.find((b) => b.pipelineId === web.id && b.number === 35);
      if (newest) newest.state = "canceled";
      const changed = await w.as("bob", { url: "/acme" });
      expect(rowOf(changed.body, "acme/web")).toContain('class="bar state-canceled" href="/acme/web/builds/35"');
    } finally {
      await w.app.close();
    }
  });

  it("escapes every name, description, branch and message it shows", async () => {
    const res = await world.as("bob", { url: "/acme" });
    expect(res.body).not.toContain(XSS);
    expect(res.body).toContain(`web ${XSS_ESCAPED}`);
    expect(res.body).toContain(`About web ${XSS_ESCAPED}`);
    expect(res.body).toContain(`Acme ${XSS_ESCAPED}`);
    // A bar's title names the build's branch and message.
    expect(res.body).toContain(`#35 failed on feature ${XSS_ESCAPED}: Build 35 ${XSS_ESCAPED}`);
  });

  it("filters by name, keeping the filter in the form", async () => {
    const res = await world.as("bob", { url: "/acme?name=API" });
    expect(res.body).toContain('href="/acme/api"');
    expect(res.body).not.toContain('href="/acme/web"');
    expect(res.body).toContain('value="API"');
    expect(res.body).toContain("1 pipeline<");
    const none = await world.as("bob", { url: `/acme?name=${encodeURIComponent('"><script>nothing')}` });
    expect(none.body).toContain("No pipelines match “&quot;&gt;&lt;script&gt;nothing”.");
    expect(none.body).toContain('value="&quot;&gt;&lt;script&gt;nothing"');
    expect(none.body).not.toContain("<script>nothing");
  });

  it("shows a team member only the pipelines their teams let them read", async () => {
    const rita = await world.as("rita", { url: "/teamsorg" });
    expect(rita.statusCode).toBe(200);
    expect(rita.body).toContain(`href="/teamsorg/${app.slug}"`);
    expect(rita.body).not.toContain(`/teamsorg/${hidden.slug}`);
    expect(rita.body).not.toContain("hidden build");
    const olga = await world.as("olga", { url: "/teamsorg" });
    expect(olga.body).toContain("No pipelines yet.");
    expect(olga.body).not.toContain(`/teamsorg/${app.slug}`);
  });

  it("answers 404 for an organization the person does not belong to, showing nothing of it", async () => {
    for (const slug of [elsewhere.slug, teamsOrg.slug, "nowhere"]) {
      const res = await world.as("bob", { url: `/${slug}` });
      expect([slug, res.statusCode, res.headers["content-type"]]).toEqual([slug, 404, "text/html; charset=utf-8"]);
      expect(res.body).not.toContain("Elsewhere");
      expect(res.body).not.toContain("Teams Org");
    }
  });

  it("says a page past the last is empty, with a link back to the first", async () => {
    const res = await world.as("bob", { url: "/acme?page=2" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("No pipelines yet.");
    expect(res.body).toContain('rel="prev" href="/acme"');
  });

  it("refuses a page that is not a positive number with the 400 page", async () => {
    const res = await world.as("bob", { url: "/acme?page=0" });
    expect([res.statusCode, res.headers["content-type"]]).toEqual([400, "text/html; charset=utf-8"]);
  });

  it("sends /dashboard to the person's first organization", async () => {
    const res = await world.as("bob", { url: "/dashboard" });
    expect([res.statusCode, res.headers.location]).toEqual([302, `/${acme.slug}`]);
  });
});
