import { AGENT_ID, JOB_ID, pagesWorld, XSS, XSS_ESCAPED } from "../../testing/pages-world.js";

let world: Awaited<ReturnType<typeof pagesWorld>>;
beforeAll(async () => {
  world = await pagesWorld();
});
afterAll(() => world.app.close());

describe("GET /organizations/{org}/agents", () => {
  it("lists the agents with state, name, hostname, tags, version and current job, every text escaped", async () => {
    const res = await world.as("bob", { url: "/organizations/acme/agents" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<span class="state state-connected">connected</span>');
    expect(res.body).toContain(`<a href="/organizations/acme/agents/${AGENT_ID}">agent ${XSS_ESCAPED}</a>`);
    expect(res.body).toContain(`host ${XSS_ESCAPED}`);
    expect(res.body).toContain(`<span class="tag">os=${XSS_ESCAPED}</span>`);
    expect(res.body).toContain("3.137.0");
    expect(res.body).toContain(`href="/organizations/acme/jobs/${JOB_ID}"`);
    expect(res.body).not.toContain(XSS);
  });

  it("answers 404 for an organization the person does not belong to", async () => {
    expect((await world.as("rita", { url: "/organizations/acme/agents" })).statusCode).toBe(404);
    expect((await world.as("bob", { url: "/organizations/elsewhere/agents" })).statusCode).toBe(404);
  });
});

describe("GET /organizations/{org}/agents/{id}", () => {
  it("shows the agent, with pause and stop for an administrator", async () => {
    const res = await world.as("ann", { url: `/organizations/acme/agents/${AGENT_ID}` });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`<h1>agent ${XSS_ESCAPED}</h1>`);
    expect(res.body).toContain(`action="/organizations/acme/agents/${AGENT_ID}/pause"`);
    expect(res.body).toContain(`action="/organizations/acme/agents/${AGENT_ID}/stop"`);
    expect(res.body).toMatch(/<input type="hidden" name="_csrf" value="[^"]+">/);
    expect(res.body).toContain(`data-confirm="Stop agent ${XSS_ESCAPED}?"`);
    expect(res.body).not.toContain(XSS);
  });

  it("shows a member the agent without any button", async () => {
    const res = await world.as("bob", { url: `/organizations/acme/agents/${AGENT_ID}` });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain("/pause");
    expect(res.body).not.toContain("/stop");
    expect(res.body).not.toContain("/resume");
  });

  it("answers 404 for an unknown agent or another organization's", async () => {
    expect((await world.as("ann", { url: "/organizations/acme/agents/nope" })).statusCode).toBe(404);
    expect((await world.as("rita", { url: `/organizations/teamsorg/agents/${AGENT_ID}` })).statusCode).toBe(404);
  });
});

describe("GET /organizations/{org}/jobs/{id}", () => {
  it("sends to the job on its build's page", async () => {
    const res = await world.as("bob", { url: `/organizations/acme/jobs/${JOB_ID}` });
    expect([res.statusCode, res.headers.location]).toEqual([302, `/acme/web/builds/35#${JOB_ID}`]);
  });

  it("answers 404 for an unknown job, or one of another organization", async () => {
    expect((await world.as("bob", { url: "/organizations/acme/jobs/nope" })).statusCode).toBe(404);
    expect((await world.as("rita", { url: `/organizations/teamsorg/jobs/${JOB_ID}` })).statusCode).toBe(404);
  });
});
