import { eventually, localRepository, startAgent, stopAllAgents } from "../support/real-agent.js";
import { identity, send, stack, unique } from "../support/stack-env.js";
import { arrangeWebOrg, type Json, pathOf, type WebOrg } from "../support/web-world.js";

// The build page over HTTP against the running stack, with the real buildkite-agent running the build
// (docs/pages.md#builds, #logs, #actions): a coloured, grouped log read on the job's log page and through REST as
// HTML; a step that fails the first time, retried from the page; a block step with a text field (with a format) and
// a select, refused with a wrong value and unblocked from the page; the value read by the next step as meta-data;
// and the actions refused without the session's CSRF token and to a person of another organization.

jest.setTimeout(180_000);

const XSS = `<script>alert("build")</script>`;
const XSS_ESCAPED = "&lt;script&gt;alert(&quot;build&quot;)&lt;/script&gt;";

/** Prints a coloured log with groups: `---` closed, `+++` open, styles in the headers and lines. */
const COLOURED = [
  "printf -- '--- :package: \\033[33mPreparing\\033[0m\\n'",
  "printf '\\033[32mgreen\\033[0m ok\\n'",
  "echo '+++ Tests'",
  `printf '\\033[31;1mred failure\\033[0m %s\\n' '${XSS}'`,
].join("; ");

const STEPS: Json[] = [
  { label: "coloured", command: COLOURED },
  {
    label: "flaky",
    command: 'echo "attempt $BUILDKITE_RETRY_COUNT"; if [ "$BUILDKITE_RETRY_COUNT" = 0 ]; then exit 3; fi',
  },
  {
    block: `Release ${XSS}`,
    prompt: "Ship it?",
    fields: [
      { text: "Version", key: "version", format: "v[0-9]+", hint: "like v2" },
      {
        select: "Region",
        key: "region",
        options: [
          { label: "Europe", value: "eu" },
          { label: "America", value: "us" },
        ],
      },
    ],
  },
  { label: "after", command: 'echo "version=$(buildkite-agent meta-data get version)"' },
];

let org: WebOrg;
let cookie: string;
let slug: string;
let number: number;
let buildPath: string;

/** A session cookie for a person, through a one-time sign-in link (the sign-in form has its own suite). */
async function sessionOf(userId: string): Promise<string> {
  const link = await identity.createSignInLink({ userId });
  const session = await identity.signInWithLink({ secret: link.secret });
  return `conveyor_session=${session.secret}`;
}

/** A page as a signed-in person, never following redirects. */
async function page(path: string, as = cookie, init: RequestInit = {}) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    redirect: "manual",
    ...init,
    headers: { accept: "text/html", cookie: as, ...(init.headers as Record<string, string>) },
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** Posts a form of the build page as the browser does, with the CSRF token the page carries. */
async function post(path: string, fields: Array<[string, string]>, opts: { as?: string; csrf?: boolean } = {}) {
  const as = opts.as ?? cookie;
  const token = /name="_csrf" value="([^"]+)"/.exec((await page(buildPath, as)).body)?.[1] ?? "";
  const body = new URLSearchParams([...(opts.csrf === false ? [] : [["_csrf", token] as [string, string]]), ...fields]);
  return page(path, as, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: stack.apiUrl },
    body: body.toString(),
  });
}

async function readBuild(): Promise<Json> {
  const res = await send(
    "GET",
    `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${number}?include_retried_jobs=true`,
    org.admin.secret,
  );
  expect(res.status).toBe(200);
  return res.body;
}

const jobsLabelled = (build: Json, label: string): Json[] =>
  build.jobs.filter((j: Json) => j.label === label || j.name === label);

/** Waits until the build's jobs labelled `label` include one in `state`. */
async function jobIn(label: string, state: string): Promise<Json> {
  return eventually(`${label} to be ${state}`, async () =>
    jobsLabelled(await readBuild(), label).find((j) => j.state === state),
  );
}

beforeAll(async () => {
  org = await arrangeWebOrg({ teamsEnabled: false });
  startAgent({ token: org.agentToken });
  const created = await send("POST", `/v2/organizations/${org.slug}/pipelines`, org.admin.secret, {
    name: unique("Build page"),
    repository: localRepository(),
    cluster_id: org.clusterId,
    configuration: JSON.stringify({ steps: STEPS }),
  });
  expect(created.status).toBe(201);
  slug = created.body.slug;
  const build = await send("POST", `/v2/organizations/${org.slug}/pipelines/${slug}/builds`, org.admin.secret, {
    commit: "HEAD",
    branch: "main",
    message: `Build page ${XSS}`,
  });
  expect(build.status).toBe(201);
  number = build.body.number;
  buildPath = pathOf(build.body.web_url);
  cookie = await sessionOf(org.admin.id);
});

afterAll(async () => {
  await stopAllAgents();
});

describe("the build page with a build on the real agent", () => {
  it("shows the jobs as they run: a failure with its retry button, a coloured grouped log on its page", async () => {
    const coloured = await jobIn("coloured", "passed");
    const flaky = await jobIn("flaky", "failed");
    const res = await page(buildPath);
    expect(res.status).toBe(200);
    expect(res.body).toContain(`Build page ${XSS_ESCAPED}`);
    expect(res.body).not.toContain(XSS);
    expect(res.body).toContain(`<li class="job job-script" id="${coloured.id}" data-state="passed">`);
    expect(res.body).toContain(`<li class="job job-script" id="${flaky.id}" data-state="failed">`);
    expect(res.body).toContain('<span class="job-exit">exit 3</span>');
    expect(res.body).toContain(`action="${buildPath}/jobs/${flaky.id}/retry"`);
    // The block step waits behind the failure: no form yet.
    expect(res.body).not.toContain("/unblock");

    const log = await page(`${buildPath}/jobs/${coloured.id}/log`);
    expect(log.status).toBe(200);
    expect(log.body).toMatch(/<details class="g collapsed"><summary><span class="l h" id="L\d+">/);
    expect(log.body).toContain('<span class="ansi-yellow-fg">Preparing</span>');
    expect(log.body).toContain('<span class="ansi-green-fg">green</span> ok');
    expect(log.body).toMatch(
      /<details class="g expanded" open><summary><span class="l h" id="L\d+"><span class="n">\d+<\/span>/,
    );
    expect(log.body).toContain('<span style="font-weight:bold" class="ansi-red-fg">red failure</span>');
    expect(log.body).toContain(XSS_ESCAPED);
    expect(log.body).not.toContain(XSS);
    // The agent's timestamps become the lines' times.
    expect(log.body).toMatch(/<time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z">\d\d:\d\d:\d\d<\/time>/);

    // The same renderer answers REST's log for a client that asks for HTML; JSON is unchanged.
    const rest = `${stack.apiUrl}/v2/organizations/${org.slug}/pipelines/${slug}/builds/${number}/jobs/${coloured.id}/log`;
    const html = await fetch(rest, { headers: { authorization: `Bearer ${org.admin.secret}`, accept: "text/html" } });
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await html.text()).toContain('<span class="ansi-green-fg">green</span> ok');
    const json = await fetch(rest, { headers: { authorization: `Bearer ${org.admin.secret}` } });
    expect(((await json.json()) as Json).content).toContain("\x1b[32mgreen\x1b[0m ok");
  });

  it("refuses the page's actions without the CSRF token and to a person of another organization", async () => {
    const flaky = await jobIn("flaky", "failed");
    const forged = await post(`${buildPath}/jobs/${flaky.id}/retry`, [], { csrf: false });
    expect(forged.status).toBe(403);
    const other = await arrangeWebOrg({ teamsEnabled: false });
    const stranger = await sessionOf(other.admin.id);
    expect((await page(buildPath, stranger)).status).toBe(404);
    const res = await page(`${buildPath}/jobs/${flaky.id}/retry`, stranger, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: stack.apiUrl },
      body: "_csrf=x",
    });
    expect([403, 404]).toContain(res.status);
    expect(jobsLabelled(await readBuild(), "flaky")).toHaveLength(1);
  });

  it("retries the failed job from the page; the block step then takes its fields, refusing a wrong value", async () => {
    const flaky = await jobIn("flaky", "failed");
    const retried = await post(`${buildPath}/jobs/${flaky.id}/retry`, []);
    expect(retried.status).toBe(303);
    const attempt = await jobIn("flaky", "passed");
    expect(retried.headers.get("location")).toBe(`${buildPath}#${attempt.id}`);

    const gate = await jobIn(`Release ${XSS}`, "blocked");
    const res = await page(buildPath);
    // The earlier attempt stays reachable under the new one.
    expect(res.body).toContain(`<li id="${flaky.id}" class="attempt">`);
    expect(res.body).toContain(`action="${buildPath}/jobs/${gate.id}/unblock"`);
    expect(res.body).toContain(`Release ${XSS_ESCAPED}`);
    expect(res.body).toContain('<p class="prompt">Ship it?</p>');
    expect(res.body).toContain('<option value="eu">Europe</option>');

    const wrong = await post(`${buildPath}/jobs/${gate.id}/unblock`, [
      ["field:version", "latest"],
      ["field:region", "eu"],
    ]);
    expect(wrong.status).toBe(422);
    expect(wrong.body).toContain("fields.version must match the format v[0-9]+");
    expect(wrong.body).toContain('name="field:version" value="latest"');
    expect((await readBuild()).jobs.find((j: Json) => j.id === gate.id).state).toBe("blocked");

    const unblocked = await post(`${buildPath}/jobs/${gate.id}/unblock`, [
      ["field:version", "v2"],
      ["field:region", "us"],
    ]);
    expect(unblocked.status).toBe(303);
    expect(unblocked.headers.get("location")).toBe(`${buildPath}#${gate.id}`);

    const after = await jobIn("after", "passed");
    const log = await page(`${buildPath}/jobs/${after.id}/log.txt`);
    expect(log.body).toContain("version=v2");
    const done = await eventually("the build to pass", async () => {
      const b = await readBuild();
      return b.state === "passed" ? b : undefined;
    });
    expect(done.jobs.find((j: Json) => j.id === gate.id).unblocked_by.id).toBe(org.admin.id);
    const final = await page(buildPath);
    expect(final.body).toContain('<span class="state state-passed">passed</span>');
    expect(final.body).toContain('<td class="mono">region</td><td><pre class="value">us</pre></td>');
    // A finished build offers a rebuild and no cancel.
    expect(final.body).toContain(`action="${buildPath}/rebuild"`);
    expect(final.body).not.toContain(`action="${buildPath}/cancel"`);
  });

  it("opens a job at its web_url's anchor, and shows its log's tail in place with ?job=", async () => {
    const build = await readBuild();
    const coloured = jobsLabelled(build, "coloured")[0];
    // REST's web_url names the job by its anchor on the build page.
    expect(pathOf(coloured.web_url)).toBe(`${buildPath}#${coloured.id}`);
    const res = await page(`${buildPath}?job=${coloured.id}`);
    const row = res.body.slice(res.body.indexOf(`id="${coloured.id}"`));
    expect(row).toContain('<div class="job-panel-slot" data-loaded>');
    expect(row).toContain('<span class="ansi-green-fg">green</span> ok');
  });
});
