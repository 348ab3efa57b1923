import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page, Request } from "playwright-core";
import {
  activateByKeyboard,
  colourOf,
  focusByKeyboard,
  isValidInput,
  itInBrowser,
  type Person,
  targetedId,
  useBrowser,
} from "../support/browser.js";
import { eventually, localRepository, startAgent, stopAllAgents } from "../support/real-agent.js";
import { api, unique } from "../support/stack-env.js";
import {
  arrangeBuild,
  arrangePipeline,
  arrangeWebOrg,
  type Json,
  pathOf,
  readBuild,
  signIn,
  type WebOrg,
} from "../support/web-world.js";

// A person works on builds in Chromium as on Buildkite, on the real buildkite-agent: starts a build from the
// pipeline's form and watches it run (job states and log lines arrive without a reload, docs/pages.md#live-updates),
// reads a coloured, grouped log (groups open and close, colours show, every line has its anchor), unblocks a block
// step with fields, retries a failed job and cancels a running build, each action from the keyboard alone.

jest.setTimeout(180_000);

const browser = useBrowser(__filename);
let org: WebOrg;
let repository: string;
/** Files the jobs wait for or leave behind (the agent runs on this machine). */
let marks: string;
let signedIn: Person | undefined;

beforeAll(async () => {
  org = await arrangeWebOrg();
  repository = localRepository();
  marks = mkdtempSync(join(tmpdir(), "conveyor-browser-marks-"));
  startAgent({ token: org.agentToken, name: unique("browser-agent") });
}, 60_000);

afterAll(async () => {
  await stopAllAgents();
});

/** The organization's admin, signed in (once per suite). */
async function admin(): Promise<Person> {
  if (!signedIn) {
    signedIn = await browser.person("admin");
    await signIn(signedIn, org.admin, `/${org.slug}`);
  }
  return signedIn;
}

const pipeline = (name: string, steps: Json[]) => arrangePipeline(org, { name: unique(name), repository, steps });

/** Waits for a build to reach a state over REST (the agent's progress, not the page's). */
async function buildState(slug: string, number: number, state: (b: Json) => boolean, what: string): Promise<Json> {
  return eventually(
    `build ${slug}#${number} ${what}`,
    async () => {
      const build = await readBuild(org, slug, number);
      return state(build) ? build : undefined;
    },
    120_000,
  );
}

/** Waits until the page shows `selector` (live updates, or the answer to an action), up to `timeout` ms. */
async function shows(page: Page, selector: string, timeout = 60_000): Promise<void> {
  await page.locator(selector).first().waitFor({ state: "attached", timeout });
}

/** Marks the page's document, so that a later check can tell whether it was reloaded. */
async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => Object.assign(globalThis, { __sameDocument: true }));
}

/** Text that is exactly `text`, as a pattern. */
const exactly = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);

/** The text of a log line that is exactly `text` (not the command that printed it). */
const logLine = (page: Page, text: string) => page.locator(".log .l .t").filter({ hasText: exactly(text) });

/** The log line (its anchor's element) whose text is exactly `text`. */
const logRow = (page: Page, text: string) =>
  page.locator(".log .l").filter({ has: page.locator(".t").filter({ hasText: exactly(text) }) });

const sameDocument = (page: Page) =>
  page.evaluate(() => (globalThis as { __sameDocument?: boolean }).__sameDocument === true);

itInBrowser("starts a build from the pipeline's form and watches it run live, also across a hidden tab", async () => {
  const gates: [string, string] = [join(marks, "live-gate-1"), join(marks, "live-gate-2")];
  const wait = (gate: string) => `while [ ! -e "${gate}" ]; do sleep 0.2; done`;
  const p = await pipeline("Live", [
    {
      label: "Live job",
      // An expanded group (+++), as people write their steps: Buildkite's rules keep the agent's own groups closed.
      command: [
        'echo "+++ Live output"',
        'echo "first live line"',
        wait(gates[0]),
        'echo "second live line"',
        wait(gates[1]),
        'echo "third live line"',
      ].join("; "),
    },
  ]);
  try {
    await watchLive(p, gates);
  } finally {
    // The job waits for the gates: open them whatever happened, so the agent is free for the next test.
    for (const gate of gates) writeFileSync(gate, "");
  }
});

/** The page's live streams (EventSource requests): how many were opened, and a wait until none is open. */
function trackStreams(page: Page) {
  const open = new Set<Request>();
  let opened = 0;
  page.on("request", (r) => {
    if (r.resourceType() !== "eventsource") return;
    opened++;
    open.add(r);
  });
  const closed = (r: Request) => {
    open.delete(r);
  };
  page.on("requestfinished", closed);
  page.on("requestfailed", closed);
  return {
    opened: () => opened,
    closed: () => eventually("the page's live stream to close", async () => (open.size === 0 ? true : undefined)),
  };
}

/** Tells the page that its tab went to the background (hidden) or came back (visible), as the browser would. */
async function setVisibility(page: Page, state: "hidden" | "visible"): Promise<void> {
  await page.evaluate((s) => {
    const doc = (globalThis as unknown as { document: { dispatchEvent(e: unknown): void } }).document;
    Object.defineProperty(doc, "visibilityState", { configurable: true, get: () => s });
    Object.defineProperty(doc, "hidden", { configurable: true, get: () => s === "hidden" });
    doc.dispatchEvent(new Event("visibilitychange"));
  }, state);
}

/**
 * The live flow: the new build form; the job's state and first line arriving in the open page; the tab hidden (its
 * stream closed) while the job prints its second line, shown again (the stream resumed: the line once); the third
 * line and the passed states arriving live; the stream closed once the build finished.
 */
async function watchLive(p: Json, gates: [string, string]): Promise<void> {
  const person = await admin();
  const page = await person.open(`/${org.slug}/${p.slug}`, { label: "pipeline" });
  const streams = trackStreams(page);

  // The "New build" form, folded away: opened and submitted from the keyboard.
  await activateByKeyboard(page, page.locator("details.new-build > summary"));
  await focusByKeyboard(page, page.getByLabel("Message"));
  await page.keyboard.type("Watched live");
  await focusByKeyboard(page, page.getByRole("button", { name: "Create build" }));
  await Promise.all([page.waitForURL(/\/builds\/\d+$/), page.keyboard.press("Enter")]);
  await person.snap("new-build");
  await expect(page.locator("h1").textContent()).resolves.toContain("Watched live");
  const number = Number(new URL(page.url()).pathname.split("/").pop());
  await markDocument(page);

  // Open the job (its log shows in place), then watch it start and print.
  const job = page.locator("li.job-script").first();
  await job.locator("summary").click();
  await shows(page, 'li.job-script[data-state="running"]');
  await logLine(page, "first live line").waitFor({ timeout: 60_000 });
  await person.snap("running");
  expect(streams.opened()).toBeGreaterThan(0);

  // In the background the page stops listening; the job prints meanwhile; back, it resumes where it was.
  await setVisibility(page, "hidden");
  await streams.closed();
  const openedBefore = streams.opened();
  writeFileSync(gates[0], "");
  await eventually("the job's second line to be stored", async () =>
    (await readJobLog(p.slug, number)).includes("second live line") ? true : undefined,
  );
  expect(await logLine(page, "second live line").count()).toBe(0);
  await setVisibility(page, "visible");
  await logLine(page, "second live line").waitFor({ timeout: 60_000 });
  expect(streams.opened()).toBeGreaterThan(openedBefore);

  writeFileSync(gates[1], "");
  await logLine(page, "third live line").waitFor({ timeout: 60_000 });
  await shows(page, 'li.job-script[data-state="passed"]');
  await shows(page, '.build[data-state="passed"]');
  await person.snap("passed");
  // The build finished: the page stops listening.
  await streams.closed();
  // Every line once, in order, in the same document: nothing was reloaded.
  expect(await sameDocument(page)).toBe(true);
  const lines = await page.locator(".log .l .t").allTextContents();
  const live = lines.filter((l) => /^(first|second|third) live line$/.test(l));
  expect(live).toEqual(["first live line", "second live line", "third live line"]);
}

/** A build's first job's log over REST, as the admin reads it. */
async function readJobLog(slug: string, number: number): Promise<string> {
  const build = await readBuild(org, slug, number);
  const res = await api(
    `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${number}/jobs/${build.jobs[0].id}/log`,
    org.admin.secret,
  );
  return String(res.body?.content ?? "");
}

itInBrowser(
  "reads a coloured, grouped log: groups open and close, colours show, every line has its anchor",
  async () => {
    const p = await pipeline("Log", [
      {
        label: "Coloured",
        command: [
          "printf -- '--- \\033[33mBuilding\\033[0m things\\n'",
          "echo 'inside the building group'",
          "printf -- '+++ Tests\\n'",
          "printf '\\033[31mred failure text\\033[0m\\n'",
          "printf '\\033[1;32mbold green text\\033[0m\\n'",
          "echo '~~~ Quiet group'",
          "echo 'quiet line'",
        ].join("\n"),
      },
    ]);
    const created = await arrangeBuild(org, p.slug);
    const build = await buildState(p.slug, created.number, (b) => b.state === "passed", "to pass");
    const job = build.jobs[0];
    const person = await admin();
    const page = await person.open(`${pathOf(build.web_url)}/jobs/${job.id}/log`, { label: "log" });

    const group = (title: string) => page.locator("details.g", { has: page.locator("summary", { hasText: title }) });
    expect(await group("Tests").getAttribute("open")).not.toBeNull();
    expect(await group("Building").getAttribute("open")).toBeNull();
    expect(await group("Quiet group").getAttribute("open")).toBeNull();
    expect(await logLine(page, "inside the building group").isVisible()).toBe(false);

    // A group opens and closes from the keyboard.
    await activateByKeyboard(page, group("Building").locator("summary"));
    expect(await logLine(page, "inside the building group").isVisible()).toBe(true);
    await page.keyboard.press("Enter");
    expect(await logLine(page, "inside the building group").isVisible()).toBe(false);
    await person.snap("groups");

    // Colours: the red and green text are not in the log's own colour, and not in each other's.
    const plain = await colourOf(logLine(page, "quiet line"));
    const red = await colourOf(page.getByText("red failure text", { exact: true }));
    const green = await colourOf(page.getByText("bold green text", { exact: true }));
    expect(red).not.toBe(plain);
    expect(green).not.toBe(plain);
    expect(red).not.toBe(green);
    const [r, g] = (red.match(/\d+/g) ?? []).map(Number);
    expect(r).toBeGreaterThan(g ?? 255);

    // Every line has its anchor; following one targets that line, even inside a closed group.
    const ids = await page.locator(".log .l").evaluateAll((els) => els.map((el) => (el as { id: string }).id));
    expect(ids.length).toBeGreaterThan(5);
    for (const id of ids) expect(id).toMatch(/^L\d+$/);
    expect(new Set(ids).size).toBe(ids.length);
    const redLine = logRow(page, "red failure text");
    const redId = await redLine.getAttribute("id");
    await redLine.locator("a.n").click();
    expect(new URL(page.url()).hash).toBe(`#${redId}`);
    const hidden = logRow(page, "inside the building group");
    const hiddenId = await hidden.getAttribute("id");
    await person.open(`${pathOf(build.web_url)}/jobs/${job.id}/log#${hiddenId}`, { label: "log-anchor" });
    expect(await targetedId(page)).toBe(hiddenId);
    expect(await hidden.isVisible()).toBe(true);
  },
);

itInBrowser("unblocks a block step with a required text field and selects, from the keyboard", async () => {
  const p = await pipeline("Unblock", [
    {
      block: "Release?",
      key: "release-gate",
      prompt: "Fill in the release",
      fields: [
        { text: "Release name", key: "release-name", required: true, hint: "Like v1.2.3" },
        {
          select: "Region",
          key: "region",
          required: true,
          options: [
            { label: "Europe", value: "eu" },
            { label: "America", value: "us" },
          ],
        },
        {
          select: "Extras",
          key: "extras",
          required: false,
          multiple: true,
          options: [
            { label: "Docs", value: "docs" },
            { label: "Notes", value: "notes" },
          ],
        },
      ],
    },
    {
      label: "After",
      command:
        'echo "release=$(buildkite-agent meta-data get release-name) region=$(buildkite-agent meta-data get region)"',
    },
  ]);
  const created = await arrangeBuild(org, p.slug);
  await buildState(p.slug, created.number, (b) => b.blocked === true, "to block");
  const person = await admin();
  const page = await person.open(pathOf(created.web_url), { label: "blocked" });
  const form = page.locator("form.unblock-form");
  await expect(page.locator(".block-step .prompt").textContent()).resolves.toBe("Fill in the release");

  // The required field left empty: the browser keeps the form and says so, nothing is sent.
  let posted = false;
  page.on("request", (r) => {
    if (r.method() === "POST") posted = true;
  });
  await activateByKeyboard(page, form.getByRole("button"));
  expect(await isValidInput(form.getByLabel(/Release name/))).toBe(false);
  expect(posted).toBe(false);

  // Filled by keyboard: the text, the second region, one extra.
  await focusByKeyboard(page, form.getByLabel(/Release name/), { fromTop: true });
  await page.keyboard.type("v1.2.3");
  await focusByKeyboard(page, form.getByLabel(/Region/));
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowDown");
  expect(await form.getByLabel(/Region/).inputValue()).toBe("us");
  await focusByKeyboard(page, form.getByLabel("Notes"));
  await page.keyboard.press("Space");
  await focusByKeyboard(page, form.getByRole("button"));
  await person.snap("unblock-filled");
  await Promise.all([page.waitForLoadState("load"), page.waitForURL(/\/builds\/\d+/), page.keyboard.press("Enter")]);
  await person.snap("unblocked");

  const build = await buildState(p.slug, created.number, (b) => b.state === "passed", "to pass");
  expect(build.meta_data).toMatchObject({ "release-name": "v1.2.3", region: "us", extras: "notes" });
  const block = build.jobs.find((j: Json) => j.type === "manual");
  expect(block.unblocked_by?.id).toBe(org.admin.id);
  await shows(page, `li.job[id="${block.id}"] >> text=/Unblocked by/`);
});

itInBrowser("retries a failed job: the new attempt runs, the failed one stays reachable", async () => {
  const mark = join(marks, "flaky-mark");
  const p = await pipeline("Retry", [
    {
      label: "Flaky",
      command: `if [ -e "${mark}" ]; then echo "fixed now"; else touch "${mark}"; echo "broken first"; exit 3; fi`,
    },
  ]);
  const created = await arrangeBuild(org, p.slug);
  const failed = await buildState(p.slug, created.number, (b) => b.state === "failed", "to fail");
  const firstJob = failed.jobs[0];
  const person = await admin();
  const page = await person.open(pathOf(created.web_url), { label: "failed" });
  const row = page.locator(`li.job[id="${firstJob.id}"]`);
  expect(await row.getAttribute("data-state")).toBe("failed");
  await expect(row.locator(".job-exit").textContent()).resolves.toBe("exit 3");

  await activateByKeyboard(page, row.locator("summary").first());
  await focusByKeyboard(page, row.getByRole("button", { name: "Retry" }));
  await Promise.all([page.waitForURL(/\/builds\/\d+/), page.waitForLoadState("load"), page.keyboard.press("Enter")]);
  await person.snap("retried");

  const retried = await buildState(p.slug, created.number, (b) => b.state === "passed", "to pass after the retry");
  const newJob = retried.jobs.find((j: Json) => j.id !== firstJob.id && j.state === "passed");
  expect(newJob).toBeDefined();
  // The page (live, or as the action answered it) shows the new attempt passing, the failed one among its attempts.
  await shows(page, `li.job[id="${newJob.id}"][data-state="passed"]`);
  const attempt = page.locator(`li.attempt[id="${firstJob.id}"]`);
  await attempt.waitFor({ state: "attached" });
  // The attempts list is folded away: its link is read from the markup.
  const attemptLog = await attempt.locator("a").getAttribute("href");
  const logPage = await person.open(attemptLog ?? "", { label: "earlier-attempt-log" });
  await logLine(logPage, "broken first").waitFor();
});

itInBrowser("retries all failed jobs of a build, then rebuilds it, from the keyboard", async () => {
  const step = (name: string) => {
    const mark = join(marks, `${name}-mark`);
    return { label: name, command: `if [ -e "${mark}" ]; then echo "${name} fixed"; else touch "${mark}"; exit 1; fi` };
  };
  const p = await pipeline("Retry all", [step("first"), step("second")]);
  const created = await arrangeBuild(org, p.slug);
  await buildState(p.slug, created.number, (b) => b.state === "failed", "to fail");
  const person = await admin();
  const page = await person.open(pathOf(created.web_url), { label: "two-failed" });
  await Promise.all([
    page.waitForURL(/\/builds\/\d+/),
    page.waitForLoadState("load"),
    activateByKeyboard(page, page.getByRole("button", { name: "Retry failed jobs" })),
  ]);
  const retried = await buildState(p.slug, created.number, (b) => b.state === "passed", "to pass after the retries");
  expect(retried.jobs.filter((j: Json) => j.state === "passed")).toHaveLength(2);
  await shows(page, '.build[data-state="passed"]');
  await person.snap("retried-all");

  // A rebuild is a new build of the same commit: the answer is its page.
  await Promise.all([
    page.waitForURL((url) => url.pathname.endsWith(`/builds/${created.number + 1}`)),
    activateByKeyboard(page, page.getByRole("button", { name: "Rebuild" })),
  ]);
  await person.snap("rebuilt");
  const rebuilt = await buildState(p.slug, created.number + 1, (b) => b.state === "passed", "the rebuild to pass");
  expect(rebuilt.rebuilt_from?.number).toBe(created.number);
  await shows(page, '.build[data-state="passed"]');
});

itInBrowser("cancels a running build after confirming, and the page shows it canceled", async () => {
  const p = await pipeline("Cancel", [{ label: "Long", command: 'echo "long job started"; sleep 300' }]);
  const created = await arrangeBuild(org, p.slug);
  await buildState(p.slug, created.number, (b) => b.jobs[0]?.state === "running", "to run");
  const person = await admin();
  const page = await person.open(pathOf(created.web_url), { label: "running" });
  person.acceptNextDialog(/Cancel this build/);
  await Promise.all([
    page.waitForURL(/\/builds\/\d+/),
    page.waitForLoadState("load"),
    activateByKeyboard(page, page.getByRole("button", { name: "Cancel build" })),
  ]);
  const build = await buildState(p.slug, created.number, (b) => b.state === "canceled", "to be canceled");
  expect(build.jobs[0].state).toBe("canceled");
  await shows(page, '.build[data-state="canceled"]');
  await person.snap("canceled");
  expect(await page.getByRole("button", { name: "Cancel build" }).count()).toBe(0);
});
