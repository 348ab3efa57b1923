import type { Build, Job } from "@conveyor/proto/builds";
import {
  AGENT_ID,
  aBuild,
  ann,
  BUILD_ID,
  buildPageWorld,
  COLOURED_LOG,
  JOB,
  numberedLog,
  rita,
  web,
} from "../../testing/build-page-world.js";
import { trusted } from "../html.js";
import { createJobRowCache, renderJobs } from "./build-jobs.js";

// The build page over the gateway's test app: what it shows of the build, its jobs, annotations, artifacts and
// meta-data; who sees which buttons; that every person's text is escaped; and what it reads (no read per job).

const BUILD = "/acme/web/builds/7";
/** What must never appear in a page: the hostile text unescaped. */
const RAW = ["<script>alert", "<img src=x onerror"];

const noRawXss = (body: string) => {
  for (const raw of RAW) expect(body).not.toContain(raw);
};

describe("the build page", () => {
  it("shows the build's header: message, state, branch, commit, creator, source, times and linked builds", async () => {
    const w = await buildPageWorld();
    const res = await w.get(BUILD);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    const body = res.body;
    expect(body).toContain(`<h1><span class="build-number">#7</span> Fix the thing &lt;script&gt;`);
    expect(body).toContain('<span class="state state-failing">failing</span>');
    expect(body).toContain("<code>main&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect(body).toContain('<code title="0123456789abcdef0123456789abcdef01234567">0123456</code>');
    expect(body).toContain("<dt>Created by</dt><dd>Ann</dd>");
    expect(body).toContain("<dt>Source</dt><dd>ui</dd>");
    expect(body).toContain('<time datetime="2026-02-01T10:00:05.000Z" data-local>');
    expect(body).toContain('<dt>Rebuilt from</dt><dd><a href="/acme/web/builds/6">web #6</a></dd>');
    expect(body).toContain(
      `<dt>Triggered from</dt><dd><a href="/acme/parent/builds/3#44444444-0000-4000-8000-0000000000aa">parent #3</a></dd>`,
    );
    expect(body).toContain('<a href="/acme/deploy/builds/12">deploy #12</a>');
    // The message's further lines, escaped.
    expect(body).toContain('<pre class="build-message-more">Second line &lt;script&gt;');
    noRawXss(body);
  });

  it("lists every job in step order with its state, duration, agent and exit status; each its own anchor", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    const order = [JOB.passed, JOB.failed, JOB.softFailed, JOB.waiter, JOB.block, JOB.teamBlock, JOB.trigger];
    const positions = order.map((id) => body.indexOf(`<li class="job `) >= 0 && body.indexOf(`id="${id}"`));
    expect(positions.every((p) => typeof p === "number" && p > 0)).toBe(true);
    expect([...positions].sort((a, b) => Number(a) - Number(b))).toEqual(positions);
    expect(body).toContain(`<li class="job job-script" id="${JOB.passed}" data-state="passed">`);
    expect(body).toContain('<span class="job-duration">1m 05s</span>');
    expect(body).toContain(`<a href="/organizations/acme/agents/${AGENT_ID}">agent &lt;script&gt;`);
    expect(body).toContain('<span class="job-exit">exit 2</span>');
    expect(body).toContain('<span class="tag soft-failed">soft failed</span>');
    expect(body).toContain(`<li class="job job-waiter" id="${JOB.waiter}" data-state="waiting_failed">`);
    expect(body).toContain('<span class="tag">trigger</span> deploy');
    expect(body).toContain('<pre class="command">make &lt;script&gt;');
    noRawXss(body);
  });

  it("keeps a retried job's earlier attempts reachable: listed under the current one, each with its anchor", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    const current = body.indexOf(`id="${JOB.failed}"`);
    const earlier = body.indexOf(`<li id="${JOB.firstAttempt}" class="attempt">`);
    expect(current).toBeGreaterThan(0);
    expect(earlier).toBeGreaterThan(current);
    expect(body).toContain("1 earlier attempt");
    expect(body).toContain("retried by Ann");
    expect(body).toContain(`/acme/web/builds/7/jobs/${JOB.firstAttempt}/log">Log of this attempt</a>`);
    // One row per step: the first attempt is not listed as a job of its own.
    expect(body).not.toContain(`<li class="job job-script" id="${JOB.firstAttempt}"`);
  });

  it("shows a block step's prompt and its form with every field, escaped, to a person who may unblock it", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    expect(body).toContain('<p class="prompt">Ship it? &lt;script&gt;');
    expect(body).toContain(
      `<form method="post" action="/acme/web/builds/7/jobs/${JOB.block}/unblock" class="stacked unblock-form">`,
    );
    expect(body).toContain(`<input type="hidden" name="_csrf" value="`);
    expect(body).toContain(`name="field:version" value="v1&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;`);
    expect(body).toContain("Format: v[0-9.]+");
    expect(body).toContain(
      `<input type="checkbox" id="unblock-${JOB.block}-regions-0" name="field:regions" value="eu" checked>`,
    );
    expect(body).toContain('value="us&lt;script&gt;');
    expect(body).toContain(`<select id="unblock-${JOB.block}-env" name="field:env" required>`);
    expect(body).toContain('<button type="submit" class="primary">Ship</button>');
    // The step limited to a team Ann is not in: no form, and who may.
    const team = body.slice(body.indexOf(`id="${JOB.teamBlock}"`));
    expect(team.slice(0, team.indexOf("</li>"))).not.toContain("<form");
    expect(team).toContain("Only members of release may unblock this step.");
    noRawXss(body);
  });

  it("shows the build's actions to a person who may build: rebuild, retry failed jobs, cancel, retry a job", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    expect(body).toContain('<form method="post" action="/acme/web/builds/7/rebuild">');
    expect(body).toContain('<form method="post" action="/acme/web/builds/7/retry-failed">');
    expect(body).toContain('<form method="post" action="/acme/web/builds/7/cancel" data-confirm="Cancel this build?">');
    expect(body).toContain(`action="/acme/web/builds/7/jobs/${JOB.failed}/retry"`);
    // A passed job, a retried one and a soft failure the service says may not be retried get no button.
    expect(body).not.toContain(`jobs/${JOB.passed}/retry`);
    expect(body).not.toContain(`jobs/${JOB.firstAttempt}/retry`);
  });

  it("gives every job's Retry to one form, the only one with the CSRF token among the jobs", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    expect(body).toContain(
      `<button type="submit" form="job-retry" formaction="/acme/web/builds/7/jobs/${JOB.failed}/retry">Retry</button>`,
    );
    expect(body).toMatch(/<form id="job-retry" method="post" hidden><input type="hidden" name="_csrf" value="[^"]+">/);
    // The rows themselves carry no token (only a waiting block step's form does), so every person's are alike.
    const row = body.slice(body.indexOf(`<li class="job job-script" id="${JOB.failed}"`));
    expect(row.slice(0, row.indexOf('<li class="job ', 1))).not.toContain("_csrf");
  });

  it("reads an unchanged build as not modified and shows it as before; a changed build is read and shown anew", async () => {
    const w = await buildPageWorld();
    const first = (await w.get(BUILD)).body;
    const again = (await w.get(BUILD)).body;
    expect(w.calls.notModified).toBe(1);
    const withoutTokens = (page: string) => page.replace(/name="_csrf" value="[^"]*"|nonce="[^"]*"/g, "");
    expect(withoutTokens(again)).toBe(withoutTokens(first));
    // A job changed: a new version, read whole, its row rendered again.
    const key = `${web.id}:7`;
    const build = w.builds.get(key) as Build;
    w.builds.set(key, {
      ...build,
      jobs: build.jobs.map((j) => (j.id === JOB.failed ? { ...j, state: "passed", manualRetryProblem: "passed" } : j)),
    });
    const changed = (await w.get(BUILD)).body;
    expect(w.calls.notModified).toBe(1);
    expect(changed).toContain(`<li class="job job-script" id="${JOB.failed}" data-state="passed">`);
    expect(changed).not.toContain(`jobs/${JOB.failed}/retry`);
  });

  it("keeps a row by what it shows: who may retry, the build's version; never a running job's or the open one", () => {
    const rows = createJobRowCache();
    const jobs = aBuild().jobs;
    const ctx = (canBuild: boolean, version = "v1") => ({
      orgSlug: "acme",
      pipelineSlug: "web",
      buildNumber: 7,
      canBuild,
      mayUnblock: () => canBuild,
      csrf: trusted('<input type="hidden" name="_csrf" value="t">'),
      now: Date.now(),
      rows,
      version,
    });
    const builder = renderJobs(jobs, ctx(true)).value;
    expect(builder).toContain(`jobs/${JOB.failed}/retry`);
    const kept = rows.size;
    expect(kept).toBeGreaterThan(0);
    expect(renderJobs(jobs, ctx(true)).value).toBe(builder);
    expect(rows.size).toBe(kept);
    expect(renderJobs(jobs, ctx(false)).value).not.toContain(`jobs/${JOB.failed}/retry`);
    // Without a version nothing is kept.
    const before = rows.size;
    renderJobs(jobs, ctx(true, ""));
    expect(rows.size).toBe(before);
    // A running job's duration runs to now: rendered each time, never kept.
    const running = { ...jobs[0], state: "running", finishedAt: undefined } as Job;
    const at = (now: number) => renderJobs([running], { ...ctx(true, "v2"), now }).value;
    expect(at(Number(running.startedAt?.seconds ?? 0n) * 1000 + 5_000)).toContain("5s");
    expect(at(Number(running.startedAt?.seconds ?? 0n) * 1000 + 65_000)).toContain("1m 05s");
  });

  it("shows a person who may only read no action, except the block step their team may unblock", async () => {
    const w = await buildPageWorld();
    const res = await w.get("/teamsorg/app/builds/7", "rita");
    expect(res.statusCode).toBe(200);
    const body = res.body;
    for (const action of ["/rebuild", "/retry-failed", "/cancel", '/retry"']) expect(body).not.toContain(action);
    expect(body).not.toContain(`jobs/${JOB.block}/unblock`);
    expect(body).toContain(`action="/teamsorg/app/builds/7/jobs/${JOB.teamBlock}/unblock"`);
    // Her teams were read once, because a waiting step names allowed teams.
    expect(w.calls.teams).toEqual([rita.id]);
    // Olga reads the pipeline too, but is in no team: no form at all.
    const olga = (await w.get("/teamsorg/app/builds/7", "olga")).body;
    expect(olga).not.toContain("/unblock");
    // Nor the form the Retry buttons submit, which only people who may build get.
    expect(body).not.toContain('id="job-retry"');
    expect(olga).not.toContain('id="job-retry"');
  });

  it("shows the annotations' stored HTML as it is, grouped by style in priority order, contexts escaped", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    expect(body).toContain('<div class="annotation-body"><p><strong>Broken</strong> tests</p></div>');
    expect(body).toContain('<p class="annotation-context">ctx &lt;script&gt;');
    const errors = body.indexOf('<div class="annotation-group annotation-error">');
    const info = body.indexOf('<div class="annotation-group annotation-info">');
    expect(errors).toBeGreaterThan(0);
    expect(info).toBeGreaterThan(errors);
    // Both error annotations are in the error group, before the info group.
    expect(body.indexOf("Also this")).toBeLessThan(info);
  });

  it("lists artifacts with download links once uploaded, and the build's meta-data, escaped", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(BUILD)).body;
    expect(body).toContain(
      `<a href="/acme/web/builds/7/jobs/${JOB.passed}/artifacts/art-1" download>pkg/&lt;script&gt;`,
    );
    expect(body).toContain("<td>2.0 KiB</td>");
    expect(body).toContain("<span>pkg/pending.txt</span>");
    expect(body).not.toContain("artifacts/art-2");
    expect(body).toContain('<td class="mono">key&lt;script&gt;');
    expect(body).toContain('<pre class="value">v1</pre>');
    noRawXss(body);
  });

  it("reads the build once with its jobs, and no log, env or job per job", async () => {
    const w = await buildPageWorld();
    await w.get(BUILD);
    expect(w.calls.builds).toBe(1);
    expect(w.calls.streams).toEqual([]);
    expect(w.calls.env).toEqual([]);
    // The person's teams once, because a waiting block step names allowed teams.
    expect(w.calls.teams).toEqual([ann.id]);
  });

  it("opens the job `?job=` names with its log's tail and its environment", async () => {
    const w = await buildPageWorld();
    const body = (await w.get(`${BUILD}?job=${JOB.passed}`)).body;
    const row = body.slice(body.indexOf(`id="${JOB.passed}"`));
    expect(row).toMatch(/^id="[^"]+" data-state="passed"><details class="job-details" open/);
    expect(row).toContain('<div class="job-panel-slot" data-loaded>');
    expect(row).toContain('<span class="ansi-red-fg">FAIL</span>');
    expect(row).toContain('<details class="g expanded" open>');
    expect(row).toContain('<td class="mono">SECRET_LOOKING</td>');
    expect(w.calls.streams).toHaveLength(1);
    expect(w.calls.env).toEqual([JOB.passed]);
    noRawXss(body);
  });

  it("shows a job's own annotations in its panel, 100 at a time, with how many more and a link to them", async () => {
    const w = await buildPageWorld();
    const page = (await w.get(`${BUILD}?job=${JOB.failed}`)).body;
    const panel = page.slice(page.indexOf('<div class="job-panel">'));
    expect(panel).toContain(`<h2 id="annotations-${JOB.failed}-title">Job annotations</h2>`);
    expect(panel).toContain("<p>Job note 0</p>");
    expect(panel).toContain("<p>Job note 99</p>");
    expect(panel).not.toContain("<p>Job note 100</p>");
    expect(panel).toContain("Showing 1–100 of 250.");
    const log = `/acme/web/builds/7/jobs/${JOB.failed}/log`;
    expect(panel).toContain(`<a href="${log}?annotations_page=2#annotations-${JOB.failed}-title">150 more</a>`);
    // The build's own annotations stay in the build's section, the job's only in its panel.
    const section = page.slice(page.indexOf('<section class="annotations"'), page.indexOf("</section>"));
    expect(section).not.toContain("Job note");
    noRawXss(page);
    // The next pages: on the job's log page (and its fragment), 100 more each, then the last 50.
    const second = (await w.get(`${log}?annotations_page=2`)).body;
    expect(second).toContain("<p>Job note 100</p>");
    expect(second).toContain("Showing 101–200 of 250.");
    expect(second).toContain(`<a href="${log}?annotations_page=1#annotations-${JOB.failed}-title">Previous 100</a>`);
    expect(second).toContain("50 more");
    const last = (await w.get(`${log}?annotations_page=3&fragment=1`)).body;
    expect(last).toContain("Showing 201–250 of 250.");
    expect(last).not.toContain("more</a>");
    // Bounded: a build holds at most 1,000 annotations, so no page past the 10th is asked for.
    expect((await w.get(`${log}?annotations_page=11`)).statusCode).toBe(400);
    expect((await w.get(`${BUILD}?annotations_page=0`)).statusCode).toBe(400);
  });

  it("is 404 to a person who may not read the pipeline or is not in the organization, and for a missing build", async () => {
    const w = await buildPageWorld();
    expect((await w.get("/teamsorg/app/builds/7", "olga")).statusCode).toBe(200);
    for (const [url, as] of [
      ["/acme/web/builds/7", "olga"],
      ["/acme/web/builds/99", "ann"],
      ["/acme/nope/builds/7", "ann"],
    ] as const) {
      const res = await w.get(url, as);
      expect(res.statusCode).toBe(404);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.body).toContain('<section class="error-page"');
    }
  });

  it("sends a signed-out person to sign in", async () => {
    const w = await buildPageWorld();
    const res = await w.app.inject({ url: BUILD, headers: { accept: "text/html" } });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`/login?next=${encodeURIComponent(BUILD)}`);
  });

  it("carries the build's id for live updates, and runs its script to open jobs in place", async () => {
    const w = await buildPageWorld();
    const res = await w.get(BUILD);
    expect(res.body).toContain(`<div class="build" data-build="${BUILD_ID}" data-state="failing">`);
    const nonce = /'nonce-([^']+)'/.exec(String(res.headers["content-security-policy"]))?.[1];
    expect(res.body).toMatch(/<script src="\/assets\/[0-9a-f]{16}\/build-page.js" nonce="[^"]+" defer>/);
    expect(res.body).toContain(`/build-page.js" nonce="${nonce}" defer>`);
    // Each command job's row names its panel, and links to the page with it open for readers without script.
    expect(res.body).toContain(`data-panel="/acme/web/builds/7/jobs/${JOB.failed}/log?fragment=1"`);
    expect(res.body).toContain(`<a href="/acme/web/builds/7?job=${JOB.failed}#${JOB.failed}">Show the log</a>`);
  });
});

describe("a job's log", () => {
  const LOG = `/acme/web/builds/7/jobs/${JOB.passed}/log`;

  it("is a page with the whole short log: coloured, grouped, numbered, each line its anchor, links safe", async () => {
    const w = await buildPageWorld();
    const res = await w.get(LOG);
    expect(res.statusCode).toBe(200);
    const body = res.body;
    expect(body).toContain('<details class="g collapsed"><summary><span class="l h" id="L0"><span class="n">1</span>');
    expect(body).toContain('<time datetime="2025-11-27T09:40:00.000Z">09:40:00</time>');
    expect(body).toContain('<span class="ansi-green-fg">Preparing</span>');
    expect(body).toContain('<details class="g expanded" open>');
    expect(body).toContain(":test_tube: Tests &lt;script&gt;");
    expect(body).not.toContain("javascript:");
    expect(body).toContain(">click<");
    expect(body).toContain(`<a href="${LOG}.txt" download>Download</a>`);
    noRawXss(body);
  });

  it("shows a long log's tail, read from its offset (never the whole log), and offers the whole log", async () => {
    const big = numberedLog(5 * 1024 * 1024 + 10);
    const w = await buildPageWorld({ logs: new Map([[JOB.passed, big]]) });
    const res = await w.get(LOG);
    expect(res.statusCode).toBe(200);
    // One read, of the tail only (one byte more, to know where its first line starts).
    expect(w.calls.streams.map((s) => [s.fromOffset, s.tailBytes])).toEqual([[0n, BigInt(2 * 1024 * 1024 + 1)]]);
    expect(res.body).toContain(`<a href="${LOG}?all=1">Show the whole log</a>`);
    expect(res.body).toContain("Showing the last 2.0 MiB of the log.");
    // Lines keep their offsets in the whole log; no numbers in a tail; the cut first line is left out.
    const firstShown = Math.ceil((big.length - 2 * 1024 * 1024) / 64) * 64;
    expect(res.body).toContain(`<span class="l" id="L${firstShown}"><a class="n" href="#L${firstShown}" aria-label`);
    expect(res.body).not.toContain(`id="L${firstShown - 64}"`);
    expect(res.body).toContain(`id="L${big.length - 10}"`);
    expect(res.body).not.toContain('<a class="n" href="#L0">');
  });

  it("streams the whole log with line numbers when asked, reading it twice (markers, then lines)", async () => {
    const big = numberedLog(3 * 1024 * 1024);
    const w = await buildPageWorld({ logs: new Map([[JOB.passed, big]]) });
    const res = await w.get(`${LOG}?all=1`);
    expect(res.statusCode).toBe(200);
    expect(w.calls.streams.map((s) => [s.fromOffset, s.tailBytes])).toEqual([
      [0n, 0n],
      [0n, 0n],
    ]);
    const lines = big.length / 64;
    expect(res.body).toContain('<a class="n" href="#L0">1</a>');
    expect(res.body).toContain(`<a class="n" href="#L${big.length - 64}">${lines}</a>`);
    expect(res.body.match(/<span class="l" id=/g)?.length).toBe(lines);
    // The page around it is whole.
    expect(res.body.trimEnd().endsWith("</html>")).toBe(true);
  });

  it("is a fragment (the job's panel alone) for the build page's script", async () => {
    const w = await buildPageWorld();
    const res = await w.get(`${LOG}?fragment=1`);
    expect(res.statusCode).toBe(200);
    expect(res.body.startsWith('<div class="job-panel">')).toBe(true);
    expect(res.body).not.toContain("<html");
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  it("is raw text at log.txt, as the agent wrote it", async () => {
    const w = await buildPageWorld();
    const res = await w.get(`${LOG}.txt`);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(res.body).toBe(COLOURED_LOG);
  });

  it("shows the job's environment only to a person whose access reads it", async () => {
    const w = await buildPageWorld();
    expect((await w.get(`${LOG}?fragment=1`)).body).toContain("SECRET_LOOKING");
    const without = await w.get(`${LOG}?fragment=1`, "noenv");
    expect(without.statusCode).toBe(200);
    expect(without.body).not.toContain("SECRET_LOOKING");
    expect(w.calls.env).toEqual([JOB.passed]);
  });

  it("is 404 for a job of another build, and to a person who may not read the pipeline", async () => {
    const w = await buildPageWorld();
    expect((await w.get("/acme/web/builds/7/jobs/44444444-0000-4000-8000-0000000000ff/log")).statusCode).toBe(404);
    expect((await w.get(`${LOG}?fragment=1`, "olga")).statusCode).toBe(404);
    expect((await w.get(`${LOG}.txt`, "olga")).statusCode).toBe(404);
  });
});

describe("an artifact's download from the page", () => {
  it("redirects to the signed URL for a person who may read the pipeline, 404 before it is uploaded", async () => {
    const w = await buildPageWorld();
    const res = await w.get(`/acme/web/builds/7/jobs/${JOB.passed}/artifacts/art-1`);
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe("http://store.test/signed/art-1?sig=1");
    expect((await w.get(`/acme/web/builds/7/jobs/${JOB.passed}/artifacts/art-2`)).statusCode).toBe(404);
    expect((await w.get(`/acme/web/builds/7/jobs/${JOB.passed}/artifacts/art-1`, "olga")).statusCode).toBe(404);
  });
});
