import { bob, pagesWorld, web, XSS, XSS_ESCAPED } from "../../testing/pages-world.js";

let world: Awaited<ReturnType<typeof pagesWorld>>;
beforeAll(async () => {
  world = await pagesWorld();
});
afterAll(() => world.app.close());

const FORM = {
  message: `Ship ${XSS}`,
  commit: "abc123",
  branch: "main",
  env: "A=1\nB=two=2\n\n",
  meta_data: "release=v2",
};

describe("POST /{org}/{pipeline}/builds", () => {
  it("creates the build as the person, from the form's fields, and answers 303 to its page", async () => {
    const res = await world.post("bob", "/acme/web/builds", FORM);
    expect(res.statusCode).toBe(303);
    const created = world.calls.createBuild.at(-1);
    expect(res.headers.location).toBe(`/acme/web/builds/${100 + world.calls.createBuild.length}`);
    expect(created).toMatchObject({
      pipelineId: web.id,
      organizationSlug: "acme",
      commit: "abc123",
      branch: "main",
      message: `Ship ${XSS}`,
      env: { A: "1", B: "two=2" },
      metaData: { release: "v2" },
      source: "ui",
      creator: { id: bob.id, name: bob.name },
      author: { name: bob.name, email: bob.email },
    });
  });

  it("refuses a post without the session's CSRF token, or from another site, creating nothing", async () => {
    const before = world.calls.createBuild.length;
    for (const res of [
      await world.post("bob", "/acme/web/builds", FORM, null),
      await world.post("bob", "/acme/web/builds", FORM, "forged"),
      await world.as("bob", {
        method: "POST",
        url: "/acme/web/builds",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" },
        payload: new URLSearchParams(FORM).toString(),
      }),
    ]) {
      expect([res.statusCode, res.headers["content-type"]]).toEqual([403, "text/html; charset=utf-8"]);
    }
    expect(world.calls.createBuild.length).toBe(before);
  });

  it("sends a signed-out post to sign in, creating nothing", async () => {
    const before = world.calls.createBuild.length;
    const res = await world.as(null, {
      method: "POST",
      url: "/acme/web/builds",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams(FORM).toString(),
    });
    expect([res.statusCode, res.headers.location]).toEqual([303, "/login"]);
    expect(world.calls.createBuild.length).toBe(before);
  });

  it("answers 403 to a reader and 404 to someone who may not read the pipeline", async () => {
    const before = world.calls.createBuild.length;
    expect((await world.post("rita", "/teamsorg/app/builds", FORM)).statusCode).toBe(403);
    expect((await world.post("rita", "/teamsorg/hidden/builds", FORM)).statusCode).toBe(404);
    expect((await world.post("bob", "/teamsorg/app/builds", FORM)).statusCode).toBe(404);
    expect(world.calls.createBuild.length).toBe(before);
  });

  it("shows the service's refusal on the form with the person's input kept, escaped", async () => {
    const res = await world.post("ann", "/acme/web/builds", { ...FORM, branch: "refused" });
    expect(res.statusCode).toBe(422);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain(`<li>branch is not allowed ${XSS_ESCAPED}</li>`);
    expect(res.body).toContain('<details class="panel new-build" open>');
    expect(res.body).toContain(`name="message" value="Ship ${XSS_ESCAPED}"`);
    expect(res.body).toContain('name="branch" value="refused"');
    expect(res.body).toContain(">A=1\nB=two=2\n\n</textarea>");
    expect(res.body).not.toContain(XSS);
  });

  it("refuses environment lines that are not KEY=value before asking the service", async () => {
    const before = world.calls.createBuild.length;
    const res = await world.post("bob", "/acme/web/builds", { ...FORM, env: "A=1\njust words", meta_data: "=x" });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain("<li>Environment line 2 must be KEY=value</li>");
    expect(res.body).toContain("<li>Meta-data line 1 must be KEY=value</li>");
    expect(world.calls.createBuild.length).toBe(before);
  });
});
