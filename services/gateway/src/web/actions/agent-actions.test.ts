import { AGENT_ID, anAgent, pagesWorld, XSS, XSS_ESCAPED } from "../../testing/pages-world.js";

let world: Awaited<ReturnType<typeof pagesWorld>>;
beforeAll(async () => {
  world = await pagesWorld();
});
afterAll(() => world.app.close());

describe("agent actions", () => {
  const base = `/organizations/acme/agents/${AGENT_ID}`;

  it("pauses with a note and a timeout, resumes and stops, each answering 303 to the agent page", async () => {
    const w = await pagesWorld({ agents: [anAgent()] });
    try {
      const paused = await w.post("ann", `${base}/pause`, { note: `deploying ${XSS}`, timeout_in_minutes: "15" });
      expect([paused.statusCode, paused.headers.location]).toEqual([303, base]);
      expect(w.calls.pause.at(-1)).toMatchObject({ id: AGENT_ID, note: `deploying ${XSS}`, timeoutInMinutes: 15 });
      const page = await w.as("ann", { url: base });
      expect(page.body).toContain('<span class="state state-paused">paused</span>');
      expect(page.body).toContain(`action="${base}/resume"`);
      expect(page.body).toContain(`deploying ${XSS_ESCAPED}`);
      expect((await w.post("ann", `${base}/resume`, {})).statusCode).toBe(303);
      expect(w.calls.resume).toEqual([AGENT_ID]);
      expect((await w.post("ann", `${base}/stop`, { force: "true" })).statusCode).toBe(303);
      expect(w.calls.stop.at(-1)).toMatchObject({ id: AGENT_ID, force: true });
    } finally {
      await w.app.close();
    }
  });

  it("shows the service's refusal on the agent page (422)", async () => {
    const w = await pagesWorld({ agents: [anAgent({ paused: true })] });
    try {
      const res = await w.post("ann", `${base}/pause`, {});
      expect(res.statusCode).toBe(422);
      expect(res.body).toContain('<div class="form-errors" role="alert">Agent is already paused</div>');
    } finally {
      await w.app.close();
    }
  });

  it("refuses a member (403), a post without the CSRF token (403) and a stranger (404), doing nothing", async () => {
    const before = { pause: world.calls.pause.length, stop: world.calls.stop.length };
    expect((await world.post("bob", `${base}/pause`, {})).statusCode).toBe(403);
    expect((await world.post("bob", `${base}/stop`, {})).statusCode).toBe(403);
    expect((await world.post("ann", `${base}/stop`, {}, null)).statusCode).toBe(403);
    expect((await world.post("ann", `${base}/stop`, {}, "forged")).statusCode).toBe(403);
    expect((await world.post("rita", `${base}/stop`, {})).statusCode).toBe(404);
    expect({ pause: world.calls.pause.length, stop: world.calls.stop.length }).toEqual(before);
  });

  it("refuses a timeout that is not digits with the 422 page", async () => {
    const res = await world.post("ann", `${base}/pause`, { timeout_in_minutes: "soon" });
    expect([res.statusCode, res.headers["content-type"]]).toEqual([422, "text/html; charset=utf-8"]);
  });
});
