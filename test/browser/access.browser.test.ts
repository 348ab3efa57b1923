import { Role } from "@conveyor/proto/identity";
import {
  activateByKeyboard,
  itInBrowser,
  type Person,
  seriousAccessibilityViolations,
  useBrowser,
} from "../support/browser.js";
import { eventually, localRepository, startAgent, stopAllAgents } from "../support/real-agent.js";
import { api, send, unique } from "../support/stack-env.js";
import { arrangeTeam, arrangeTeamMember } from "../support/teams-env.js";
import {
  type Account,
  arrangeAccount,
  arrangeBuild,
  arrangePipeline,
  arrangeWebOrg,
  type Json,
  pathOf,
  readBuild,
  signIn,
  type WebOrg,
} from "../support/web-world.js";

// Who sees what, in Chromium: a member whose team may only read a pipeline sees its build but no action (and a
// forged request for one is refused, the build unchanged); a person of another organization gets the 404 page for
// every page of it, which names nothing of it; an administrator pauses and resumes an agent from the keyboard. The
// organization's main pages (organization, pipeline, build, job log, agents, agent, 404) have no serious or critical
// accessibility problem (axe-core).

jest.setTimeout(180_000);

const browser = useBrowser(__filename);
let org: WebOrg;
let reader: Account;
let outsider: Account;
let pipeline: Json;
/** A build with a failed job and a block step waiting, so every action applies to it. */
let build: Json;
let agentName: string;
const people = new Map<string, Person>();

beforeAll(async () => {
  org = await arrangeWebOrg({ teamsEnabled: true });
  reader = await arrangeAccount(org, { role: Role.MEMBER });
  const team = await arrangeTeam(org.id);
  await arrangeTeamMember(org.id, team.id, reader.id);
  const other = await arrangeWebOrg();
  outsider = other.admin;

  agentName = unique("access-agent");
  startAgent({ token: org.agentToken, name: agentName });
  pipeline = await arrangePipeline(org, {
    name: unique("Read only"),
    repository: localRepository(),
    // The block step is a barrier: the failing step depends on nothing (depends_on: []), so it runs at once.
    steps: [
      { block: "Approve", key: "approve", prompt: "Ship it?" },
      { label: "Fails", command: "echo 'about to fail'; exit 2", depends_on: [] },
    ],
  });
  const link = await send("POST", `/v2/organizations/${org.slug}/teams/${team.id}/pipelines`, org.admin.secret, {
    pipeline_id: pipeline.id,
    access_level: "read_only",
  });
  expect(link.status).toBe(201);
  const created = await arrangeBuild(org, pipeline.slug);
  build = await eventually(
    "the build's first job to fail, its block step waiting, and the build to show it (failing)",
    async () => {
      const b = await readBuild(org, pipeline.slug, created.number);
      // The build's own state follows its jobs' a moment later: wait for it to settle, so later checks compare
      // against a state that no longer changes by itself.
      const settled = b.state === "failing";
      return settled &&
        b.jobs.some((j: Json) => j.state === "failed") &&
        b.jobs.some((j: Json) => j.state === "blocked")
        ? b
        : undefined;
    },
    120_000,
  );
}, 180_000);

afterAll(async () => {
  await stopAllAgents();
});

/** A person signed in (once per suite and account). */
async function as(account: Account, label: string): Promise<Person> {
  const known = people.get(label);
  if (known) return known;
  const person = await browser.person(label);
  await signIn(person, account, "/dashboard");
  people.set(label, person);
  return person;
}

/** An agent's id, by its name, over REST. */
async function agentIdOf(name: string): Promise<string> {
  const res = await api(`/v2/organizations/${org.slug}/agents?name=${encodeURIComponent(name)}`, org.admin.secret);
  const id = res.body?.[0]?.id;
  if (typeof id !== "string") throw new Error(`no agent named ${name}: ${res.status} ${res.text}`);
  return id;
}

const failedJob = () => build.jobs.find((j: Json) => j.state === "failed");
const blockJob = () => build.jobs.find((j: Json) => j.type === "manual");

itInBrowser("an administrator has every action on the build (the check below is not vacuous)", async () => {
  const admin = await as(org.admin, "admin");
  const page = await admin.open(pathOf(build.web_url), { label: "admin-build" });
  for (const name of ["Cancel build", "Retry failed jobs", "Retry"]) {
    expect(await page.getByRole("button", { name, exact: true, includeHidden: true }).count()).toBeGreaterThan(0);
  }
  expect(await page.locator("main form.unblock-form").count()).toBe(1);
});

itInBrowser("a read-only team member sees the build, its jobs and log, and no action", async () => {
  const person = await as(reader, "reader");
  const page = await person.open(pathOf(build.web_url), { label: "reader-build" });
  await expect(page.locator("h1").textContent()).resolves.toContain(`#${build.number}`);
  expect(await page.locator("li.job").count()).toBe(build.jobs.length);
  expect(await page.locator("main form").count()).toBe(0);
  expect(await page.locator("main button").count()).toBe(0);
  await expect(page.locator(".block-step").textContent()).resolves.toContain("Waiting for someone who may unblock it");
  const log = await person.open(`${pathOf(build.web_url)}/jobs/${failedJob().id}/log`, { label: "reader-log" });
  await log.getByText("about to fail").first().waitFor();
  expect(await log.locator("main form").count()).toBe(0);
});

itInBrowser(
  "a read-only member's forged requests for each action are refused, and the build is unchanged",
  async () => {
    const person = await as(reader, "reader");
    const page = await person.open(pathOf(build.web_url), { label: "reader-before-forgery" });
    // The member's own valid CSRF token (from the sign-out form): the refusal must come from the access policy.
    const token = await page.locator('header form[action="/logout"] input[name="_csrf"]').getAttribute("value");
    expect(token).toBeTruthy();
    const base = pathOf(build.web_url);
    const forged = [
      [`${base}/cancel`, {}],
      [`${base}/rebuild`, {}],
      [`${base}/retry-failed`, {}],
      [`${base}/jobs/${failedJob().id}/retry`, {}],
      [`${base}/jobs/${blockJob().id}/unblock`, {}],
    ] as const;
    for (const [path, fields] of forged) {
      const res = await person.context.request.post(path, { form: { _csrf: token ?? "", ...fields }, maxRedirects: 0 });
      expect([path, res.status()]).toEqual([path, 403]);
      expect(res.headers()["content-type"]).toMatch(/^text\/html/);
    }
    // Without the token, even the administrator's request is refused (CSRF).
    const admin = await as(org.admin, "admin");
    const noToken = await admin.context.request.post(`${base}/cancel`, { form: {}, maxRedirects: 0 });
    expect(noToken.status()).toBe(403);

    const after = await readBuild(org, pipeline.slug, build.number);
    expect(after.state).toBe(build.state);
    expect(after.jobs.map((j: Json) => [j.id, j.state])).toEqual(build.jobs.map((j: Json) => [j.id, j.state]));
    const builds = await api(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds`, org.admin.secret);
    expect(builds.body).toHaveLength(1);
  },
);

itInBrowser(
  "a person of another organization gets the 404 page for each of its pages, naming nothing of it",
  async () => {
    const person = await as(outsider, "outsider");
    const base = pathOf(build.web_url);
    const paths = [
      `/${org.slug}`,
      `/${org.slug}/${pipeline.slug}`,
      base,
      `${base}/jobs/${failedJob().id}/log`,
      `/organizations/${org.slug}/agents`,
    ];
    for (const path of paths) {
      const page = await person.open(path, { status: 404, label: `outsider-${path}` });
      const markup = await page.content();
      expect(markup).not.toContain(org.name);
      expect(markup).not.toContain(pipeline.name);
      expect(await page.locator("link[rel=stylesheet]").count()).toBe(1);
    }
    expect(await seriousAccessibilityViolations(person.page)).toEqual([]);
  },
);

itInBrowser("an administrator pauses and resumes the agent from its page, by keyboard", async () => {
  const admin = await as(org.admin, "admin");
  const list = await admin.open(`/organizations/${org.slug}/agents`, { label: "agents" });
  const link = list.getByRole("link", { name: agentName });
  const href = await link.getAttribute("href");
  expect(href).toBeTruthy();
  const page = await admin.open(href ?? "", { label: "agent" });
  await Promise.all([
    page.waitForLoadState("load"),
    activateByKeyboard(page, page.getByRole("button", { name: "Pause" })),
  ]);
  await page.getByRole("button", { name: "Resume" }).waitFor();
  await admin.snap("agent-paused");
  const agentId = href?.split("/").pop() ?? "";
  const paused = await api(`/v2/organizations/${org.slug}/agents/${agentId}`, org.admin.secret);
  expect(paused.body.paused).toBe(true);
  await Promise.all([
    page.waitForLoadState("load"),
    activateByKeyboard(page, page.getByRole("button", { name: "Resume" })),
  ]);
  await page.getByRole("button", { name: "Pause" }).waitFor();
  const resumed = await api(`/v2/organizations/${org.slug}/agents/${agentId}`, org.admin.secret);
  expect(resumed.body.paused).toBe(false);

  // A member sees the agent, without its controls.
  const member = await as(reader, "reader");
  const seen = await member.open(href ?? "", { label: "reader-agent" });
  await seen.getByText(agentName).first().waitFor();
  expect(await seen.locator("main form").count()).toBe(0);
});

itInBrowser("the organization's main pages have no serious or critical accessibility problem", async () => {
  const admin = await as(org.admin, "admin");
  const base = pathOf(build.web_url);
  const pages = [
    `/${org.slug}`,
    `/${org.slug}/${pipeline.slug}`,
    base,
    `${base}?job=${failedJob().id}`,
    `${base}/jobs/${failedJob().id}/log`,
    `/organizations/${org.slug}/agents`,
    `/organizations/${org.slug}/agents/${await agentIdOf(agentName)}`,
  ];
  const found: Record<string, unknown> = {};
  for (const path of pages) {
    const page = await admin.open(path, { label: `axe-${path}` });
    const violations = await seriousAccessibilityViolations(page);
    if (violations.length > 0) found[path] = violations;
  }
  const missing = await admin.open(`/${org.slug}/no-such-pipeline`, { status: 404, label: "axe-404" });
  const violations = await seriousAccessibilityViolations(missing);
  if (violations.length > 0) found["404"] = violations;
  expect(found).toEqual({});
});

itInBrowser("an administrator stops the agent from its page after confirming; the agent process exits", async () => {
  const admin = await as(org.admin, "admin");
  const agentId = await agentIdOf(agentName);
  const page = await admin.open(`/organizations/${org.slug}/agents/${agentId}`, { label: "agent-before-stop" });
  admin.acceptNextDialog(/^Stop /);
  await Promise.all([
    page.waitForLoadState("load"),
    activateByKeyboard(page, page.getByRole("button", { name: "Stop agent" })),
  ]);
  await admin.snap("agent-stopping");
  await eventually("the agent to disconnect", async () => {
    const res = await api(`/v2/organizations/${org.slug}/agents/${agentId}`, org.admin.secret);
    return res.status === 404 || res.body?.connection_state !== "connected" ? true : undefined;
  });
});
