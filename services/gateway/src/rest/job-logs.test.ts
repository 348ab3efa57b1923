import { buildPageWorld, COLOURED_LOG, JOB } from "../testing/build-page-world.js";
import { prefersHtml } from "./job-logs.js";

// The REST log's forms: JSON as before, plain text at log.txt, and HTML (the pages' renderer) when the client's
// Accept asks for it.

const LOG = `/v2/organizations/acme/pipelines/web/builds/7/jobs/${JOB.passed}/log`;

describe("which log form a client asks for", () => {
  it.each([
    [undefined, false],
    ["*/*", false],
    ["application/json", false],
    ["application/json, text/html", false],
    ["text/html;q=0.5, application/json", false],
    ["text/html", true],
    ["text/*", true],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true],
    ["application/json;q=0.1, text/html", true],
    ["text/html;q=0", false],
  ])("Accept %s → HTML %s", (accept, html) => {
    expect(prefersHtml(accept)).toBe(html);
  });
});

describe("GET …/jobs/{id}/log", () => {
  const as = (accept?: string) => ({ authorization: "Bearer token-ann", ...(accept ? { accept } : {}) });

  it("answers the whole log as HTML when Accept asks for text/html: numbered, grouped, escaped", async () => {
    const w = await buildPageWorld();
    const res = await w.app.inject({ url: LOG, headers: as("text/html") });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers.vary).toBe("Accept");
    expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(
      res.body.startsWith('<details class="g collapsed"><summary><span class="l h" id="L0"><span class="n">1</span>'),
    ).toBe(true);
    expect(res.body).toContain('<span class="ansi-red-fg">FAIL</span>');
    expect(res.body).not.toContain("<script>");
    expect(res.body).not.toContain("javascript:");
  });

  it("keeps the JSON form for every other Accept, and says the answer varies with it", async () => {
    const w = await buildPageWorld();
    for (const accept of [undefined, "application/json", "*/*"]) {
      const res = await w.app.inject({ url: LOG, headers: as(accept) });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.headers.vary).toBe("Accept");
      expect(res.json()).toEqual({
        url: `http://api.test${LOG}`,
        content: COLOURED_LOG,
        size: COLOURED_LOG.length,
        header_times: [],
      });
    }
  });

  it("takes the same scope and access whichever form is asked for", async () => {
    const w = await buildPageWorld();
    for (const accept of ["text/html", "application/json"]) {
      const res = await w.app.inject({ url: LOG, headers: { authorization: "Bearer token-builds-only", accept } });
      expect(res.statusCode).toBe(403);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    }
    const other = await w.app.inject({
      url: "/v2/organizations/acme/pipelines/web/builds/7/jobs/44444444-0000-4000-8000-0000000000ff/log",
      headers: as("text/html"),
    });
    expect(other.statusCode).toBe(404);
  });
});
