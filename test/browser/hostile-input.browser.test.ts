import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import type { Page } from "playwright-core";
import {
  injectedMarkup,
  itInBrowser,
  type Person,
  type Problem,
  useBrowser,
  webUrl,
  XSS_MARKER,
} from "../support/browser.js";
import { agentCall } from "../support/fuzz/agent-world.js";
import { eventually } from "../support/real-agent.js";
import { stack } from "../support/stack-env.js";
import { teams } from "../support/teams-env.js";
import {
  arrangeBuild,
  arrangePerson,
  arrangePipeline,
  arrangeWebOrg,
  type Json,
  pathOf,
  signIn,
  type WebOrg,
} from "../support/web-world.js";
import { compact, LOG_PAYLOADS, XSS_PAYLOADS } from "../support/xss-payloads.js";

// Hostile input (docs/pages.md#browser-tests): known XSS payloads sent through every field that reaches a page,
// over the REST and agent APIs as any user or agent may send them (organization, user and team names; pipeline
// names and descriptions; build messages, branches, authors, environment and meta-data; step labels; a block
// step's prompt and fields; annotations; artifact paths and an HTML artifact; an agent's name, hostname and tags;
// log bytes with terminal colours and OSC 8 links), and through what pages echo back (a refused form, an unknown
// path, the sign-in page's `next`). Every page showing them is opened in Chromium: a payload that runs calls the
// harness's marker, a blocked one is a CSP violation, a dialog is caught; all fail the test. The DOM is also searched
// for markup a payload would have made (event handlers, javascript: URLs, foreign scripts), and the payloads must be
// there as text: a page that dropped them would pass for the wrong reason.

jest.setTimeout(180_000);

const browser = useBrowser(__filename);
const P = XSS_PAYLOADS;
const ALL = P.map((p) => p.text).join("\n");
/** All the payloads after a word naming the field they were sent through, so a page shows which field reached it. */
const labelled = (field: string) => `${field} ${ALL}`;
/** What a page shows of a labelled field: its word and the first payload, as text. */
const shownOf = (field: string) => `${field} ${P[0]?.text}`;
const payloadAt = (i: number) => P[i % P.length] as (typeof P)[number];

let org: WebOrg;
let person: Person | undefined;
let hostile: Json;
let branches: Json;
let build: Json;
let jobId: string;
let agentId: string;
let agentSecret: string;
let heartbeat: NodeJS.Timeout | undefined;
const names: string[] = [];

/** A log chunk as the agent sends it (gzip body; its offset and size in the log). */
async function sendChunk(token: string, job: string, sequence: number, offset: number, text: string) {
  const bytes = Buffer.from(text);
  const res = await fetch(
    `${stack.agentUrl.replace(/\/v3\/?$/, "")}/v3/jobs/${job}/chunks?sequence=${sequence}&offset=${offset}&size=${bytes.length}`,
    {
      method: "POST",
      headers: { authorization: `Token ${token}`, "content-type": "text/plain", "content-encoding": "gzip" },
      body: gzipSync(bytes),
    },
  );
  if (res.status !== 201) throw new Error(`chunk: ${res.status} ${await res.text()}`);
  return bytes.length;
}

/** Uploads one artifact as the agent does: the batch, the signed form's POST, the finished state. */
async function uploadArtifacts(token: string, job: string, files: { path: string; type: string; body: string }[]) {
  const sha = (alg: string, b: Buffer) => createHash(alg).update(b).digest("hex");
  const bodies = files.map((f) => Buffer.from(f.body));
  const batch = {
    id: crypto.randomUUID(),
    artifacts: files.map((f, i) => ({
      path: f.path,
      file_size: bodies[i]?.length,
      sha1sum: sha("sha1", bodies[i] as Buffer),
      sha256sum: sha("sha256", bodies[i] as Buffer),
      content_type: f.type,
    })),
  };
  const created = await agentCall("POST", `/v3/jobs/${job}/artifacts`, token, batch);
  if (created.status !== 201) throw new Error(`artifacts: ${created.status} ${created.text}`);
  const body = created.body as Json;
  const states: Json[] = [];
  for (const [i, id] of (body.artifact_ids as string[]).entries()) {
    const instructions = body.per_artifact_instructions[id];
    const form = new FormData();
    for (const [k, v] of Object.entries(instructions.data as Record<string, string>)) form.append(k, v);
    form.append(
      instructions.action.file_input,
      new Blob([new Uint8Array(bodies[i] as Buffer)], { type: files[i]?.type }),
      "file",
    );
    const res = await fetch(instructions.action.url, { method: "POST", body: form });
    await res.arrayBuffer();
    if (res.status >= 300) throw new Error(`artifact upload: ${res.status}`);
    states.push({ id, state: "finished" });
  }
  const finished = await agentCall("PUT", `/v3/jobs/${job}/artifacts`, token, { artifacts: states });
  if (finished.status !== 200) throw new Error(`artifact states: ${finished.status} ${finished.text}`);
}

beforeAll(async () => {
  // Names: the organization, its admin (the builds' creator), a team.
  org = await arrangeWebOrg({ name: `Org ${payloadAt(2).text}`, adminName: payloadAt(4).text });
  await teams.createTeam({ organization: org.id, name: `Team ${payloadAt(0).text}` });

  // A pipeline per payload, named by it, each described by all of them.
  for (const [i, p] of P.entries()) {
    const created = await arrangePipeline(org, {
      name: `${p.text} P${i}`,
      description: labelled("described"),
      steps: [{ command: "true" }],
    });
    names.push(created.name);
  }

  // The hostile pipeline: a block step with every kind of field (payloads in prompt, labels, hints, defaults,
  // options), then a step per payload label running at once (depends_on: []; the block step is a barrier).
  hostile = await arrangePipeline(org, {
    name: `Hostile ${payloadAt(5).text}`,
    description: labelled("described"),
    steps: [
      {
        block: payloadAt(0).text,
        key: "gate",
        prompt: labelled("prompted"),
        fields: [
          { text: payloadAt(1).text, key: "text", hint: payloadAt(3).text, default: payloadAt(4).text },
          {
            text: payloadAt(6).text,
            key: "formatted",
            required: true,
            format: "^[a-z]+$",
            hint: payloadAt(7).text,
          },
          {
            select: payloadAt(5).text,
            key: "one",
            options: P.slice(0, 6).map((p, i) => ({ label: p.text, value: `v${i}` })),
          },
          {
            select: payloadAt(8).text,
            key: "many",
            multiple: true,
            options: P.slice(6, 12).map((p, i) => ({ label: p.text, value: `m${i}` })),
          },
        ],
      },
      ...P.map((p) => ({ label: p.text, command: "true", depends_on: [] })),
    ],
  });
  build = await arrangeBuild(org, hostile.slug, {
    message: labelled("message"),
    branch: compact(payloadAt(2)),
    author: { name: payloadAt(3).text, email: "author@example.com" },
    env: { XSS_ENV: labelled("environment") },
    meta_data: { xss: labelled("meta-data") },
  });

  // An agent named by payloads takes one of the build's jobs and writes everything a job writes.
  const registered = await agentCall("POST", "/v3/register", org.agentToken, {
    name: `agent ${payloadAt(2).text}`,
    hostname: payloadAt(1).text,
    version: "3.137.0",
    meta_data: ["queue=default", `xss=${payloadAt(0).text}`, `k=${payloadAt(4).text}`],
  });
  if (registered.status !== 200) throw new Error(`register: ${registered.status} ${registered.text}`);
  agentId = String(registered.body?.id);
  agentSecret = String(registered.body?.access_token);
  expect((await agentCall("POST", "/v3/connect", agentSecret)).status).toBe(200);
  heartbeat = setInterval(() => {
    agentCall("POST", "/v3/heartbeat", agentSecret, { sent_at: new Date().toISOString() }).catch((err: unknown) =>
      process.stderr.write(`[hostile agent] heartbeat not sent: ${String(err)}\n`),
    );
  }, 1500);
  jobId = await eventually("a job offered to the hostile agent", async () => {
    const ping = await agentCall("GET", "/v3/ping", agentSecret);
    return ((ping.body?.job as Json | undefined)?.id as string | undefined) ?? undefined;
  });
  const accepted = await agentCall("PUT", `/v3/jobs/${jobId}/accept`, agentSecret);
  expect(accepted.status).toBe(200);
  expect(accepted.body?.env).toMatchObject({ BUILDKITE_BUILD_ID: build.id });
  const jobToken = String(accepted.body?.token);
  expect((await agentCall("PUT", `/v3/jobs/${jobId}/start`, jobToken, {})).status).toBe(200);

  const log = [
    ...LOG_PAYLOADS.map((p) => `${p.text}\n`),
    `--- ${payloadAt(0).text}\n`,
    "inside a closed group\n",
    `+++ ${payloadAt(1).text}\n`,
    ...LOG_PAYLOADS.map((p) => `\u001b[1;35m${p.text}\u001b[0m\r\n`),
  ];
  let offset = 0;
  for (const [i, text] of log.entries()) offset += await sendChunk(jobToken, jobId, i + 1, offset, text);
  for (const [i, style] of ["error", "warning", "info"].entries()) {
    const res = await agentCall("POST", `/v3/jobs/${jobId}/annotations`, jobToken, {
      body: `${labelled("annotated")}\n\n<a href="javascript:${XSS_MARKER}('annotation-html')">html link</a>`,
      context: compact(payloadAt(i)),
      style,
    });
    expect(res.status).toBe(200);
  }
  const meta = await agentCall("POST", `/v3/jobs/${jobId}/data/set`, jobToken, {
    key: "xss-agent",
    value: labelled("agent-meta-data"),
  });
  expect(meta.status).toBe(200);
  await uploadArtifacts(jobToken, jobId, [
    ...P.slice(0, 6).map((p) => ({ path: `out/${compact(p)}.txt`, type: "text/plain", body: "x\n" })),
    { path: "evil.html", type: "text/html", body: `<script>${XSS_MARKER}('artifact-html')</script>` },
    {
      path: "evil.svg",
      type: "image/svg+xml",
      body: `<svg xmlns="http://www.w3.org/2000/svg" onload="${XSS_MARKER}('artifact-svg')"></svg>`,
    },
  ]);
  const finished = await agentCall("PUT", `/v3/jobs/${jobId}/finish`, jobToken, {
    exit_status: "1",
    finished_at: new Date().toISOString(),
  });
  expect(finished.status).toBe(200);

  // Builds on branches and commits named by each payload (no agent runs them: their step waits in a queue of its own).
  branches = await arrangePipeline(org, {
    name: "Branches",
    steps: [{ command: "true", agents: { queue: "nowhere" } }],
  });
  for (const p of P) {
    await arrangeBuild(org, branches.slug, { branch: compact(p), commit: `c${compact(p)}`, message: p.text });
  }
}, 180_000);

afterAll(async () => {
  clearInterval(heartbeat);
  if (agentSecret) await agentCall("POST", "/v3/disconnect", agentSecret);
});

/** The organization's admin (named by a payload), signed in. */
async function admin(): Promise<Person> {
  if (!person) {
    person = await browser.person("admin");
    await signIn(person, org.admin, `/${org.slug}`);
  }
  return person;
}

/**
 * Opens a page and checks it: no markup a payload could have made, and each of `shown` present as text (so the
 * payloads did reach it). Scripts that ran, CSP violations and dialogs fail the test through the harness.
 */
async function check(path: string, shown: string[], opts: { status?: number } = {}): Promise<Page> {
  const p = await admin();
  const page = await p.open(path, { label: path.slice(0, 60), ...opts });
  expect(await injectedMarkup(page)).toEqual([]);
  const text = (await page.locator("body").textContent()) ?? "";
  const normalized = text.replace(/\s+/g, " ");
  const missing = shown.filter((s) => !normalized.includes(s.replace(/\s+/g, " ")));
  expect(missing).toEqual([]);
  return page;
}

itInBrowser(
  "the organization page shows every payload-named pipeline, the org's and the admin's names as text",
  async () => {
    await check(`/${org.slug}`, [...names, org.name, org.admin.name, shownOf("described")]);
  },
);

itInBrowser("the pipeline pages show payload messages, branches and creators as text", async () => {
  await check(pathOf(hostile.web_url), [
    hostile.name,
    shownOf("described"),
    shownOf("message"),
    org.admin.name,
    compact(payloadAt(2)),
  ]);
  await check(pathOf(branches.web_url), [...P.map((p) => compact(p)), ...P.map((p) => p.text)]);
  // A build's page shows its commit (the first characters, the whole in its title).
  const commitPage = await check(`${pathOf(branches.web_url)}/builds/1`, [compact(payloadAt(0)).slice(0, 11)]);
  await expect(commitPage.locator(".build-facts code[title]").first().getAttribute("title")).resolves.toBe(
    `c${compact(payloadAt(0))}`,
  );
});

/**
 * Annotations keep images (Buildkite's do): the sanitiser drops a payload's onerror but keeps `<img src=x>`, which
 * the browser then asks for, relative to the build page (a 404). That request is the payload's own, not a problem.
 */
function expectAnnotationImage(): void {
  browser.expectProblems((problem) => /\/builds\/x\b/.test(`${problem.url} ${problem.detail}`));
}

itInBrowser(
  "the build page shows the message, fields, prompt, labels, annotations, artifacts and meta-data as text",
  async () => {
    expectAnnotationImage();
    const page = await check(pathOf(build.web_url), [
      shownOf("message"),
      shownOf("prompted"),
      shownOf("meta-data"),
      shownOf("agent-meta-data"),
      "annotated",
      ...[0, 1, 2].map((i) => compact(payloadAt(i))),
      // Step labels, a field's label, hint and default value, option labels.
      ...P.map((p) => p.text),
      compact(payloadAt(2)),
      payloadAt(3).text,
      `out/${compact(payloadAt(0))}.txt`,
      "evil.html",
    ]);
    // The form's default value is the payload itself, in the input (not as text).
    await expect(page.locator('input[name="field:text"]').inputValue()).resolves.toBe(payloadAt(4).text);
    expect(await page.locator("form.unblock-form").count()).toBe(1);
    // The job the agent ran, opened in place: its log's tail and its environment.
    await check(`${pathOf(build.web_url)}?job=${jobId}`, ["inside a closed group", "XSS_ENV", shownOf("environment")]);
  },
);

itInBrowser(
  "the job's log page, its tail and its whole, shows log payloads as text and links only http(s)",
  async () => {
    const logPath = `${pathOf(build.web_url)}/jobs/${jobId}/log`;
    for (const path of [logPath, `${logPath}?all=1`]) {
      const page = await check(path, [P[0]?.text ?? "", "click me", "inside a closed group"]);
      const hrefs = await page
        .locator(".log a[href]")
        .evaluateAll((as) => as.map((a) => (a as unknown as { getAttribute(n: string): string }).getAttribute("href")));
      for (const href of hrefs) expect(href).toMatch(/^(#L\d+|https?:\/\/)/);
    }
  },
);

itInBrowser("the agents pages show the agent's name, hostname and tags as text", async () => {
  await check(`/organizations/${org.slug}/agents`, [`agent ${payloadAt(2).text}`, payloadAt(1).text]);
  await check(`/organizations/${org.slug}/agents/${agentId}`, [
    `agent ${payloadAt(2).text}`,
    payloadAt(1).text,
    `xss=${payloadAt(0).text}`,
  ]);
});

itInBrowser("an HTML or SVG artifact never runs script on the pages' origin", async () => {
  expectAnnotationImage();
  const p = await admin();
  const page = await p.open(pathOf(build.web_url), { label: "artifacts" });
  const ours = new URL(stack.apiUrl).origin;
  for (const name of ["evil.html", "evil.svg"]) {
    const href = webUrl((await page.getByRole("link", { name }).getAttribute("href")) ?? "");
    // Where the download leads: a signed URL of the object store (another origin), or an answer of ours.
    const res = await p.context.request.get(href, { maxRedirects: 0 });
    const location = res.headers().location;
    const origin = new URL(location ? new URL(location, href).toString() : href).origin;
    // On another origin a script cannot reach the pages (the store's answer is its own matter); on ours it must
    // never run: opened there, the harness fails the test on the marker or a CSP violation.
    if (origin !== ours) browser.expectProblems((problem: Problem) => problem.url.startsWith(origin));
    const viewer = await p.context.newPage();
    await viewer.goto(href).catch((err: unknown) => {
      // A download aborts the navigation: a safe answer.
      if (!String(err).includes("Download is starting")) throw err;
    });
    await viewer.close();
  }
});

itInBrowser("forms echo refused payloads back as values, never as markup", async () => {
  const p = await admin();
  // The new build form, refused for a malformed environment line: everything typed comes back.
  const page = await p.open(pathOf(hostile.web_url), { label: "new-build-form" });
  const newBuild = page.locator("details.new-build");
  await newBuild.locator("summary").click();
  await newBuild.getByLabel("Message").fill(payloadAt(4).text);
  await newBuild.getByLabel("Branch").fill(payloadAt(2).text);
  await newBuild.getByLabel(/Environment/).fill(`${payloadAt(0).text}\nno equals sign ${payloadAt(1).text}`);
  await newBuild.getByLabel(/Meta-data/).fill(`k=${payloadAt(3).text}`);
  browser.expectProblems((problem) => problem.kind === "console" && /status of 4\d\d/.test(problem.detail));
  expectAnnotationImage();
  await Promise.all([page.waitForLoadState("load"), newBuild.getByRole("button", { name: "Create build" }).click()]);
  await p.snap("new-build-refused");
  expect(await injectedMarkup(page)).toEqual([]);
  await expect(newBuild.getByLabel("Message").inputValue()).resolves.toBe(payloadAt(4).text);
  await expect(newBuild.getByLabel(/Environment/).inputValue()).resolves.toContain(payloadAt(1).text);

  // The unblock form, refused for a value that breaks the field's format: the values come back.
  const blocked = await p.open(pathOf(build.web_url), { label: "unblock-form" });
  const form = blocked.locator("form.unblock-form");
  // The required text field is filled: the refusal is the builds service's, for the format.
  await form.locator('input[name="field:formatted"]').fill(payloadAt(0).text);
  await Promise.all([blocked.waitForLoadState("load"), form.locator('button[type="submit"]').click()]);
  await p.snap("unblock-refused");
  expect(await injectedMarkup(blocked)).toEqual([]);
  await expect(blocked.locator('input[name="field:formatted"]').inputValue()).resolves.toBe(payloadAt(0).text);
});

itInBrowser("unknown paths and the sign-in page's next never echo markup or leave the site", async () => {
  // A path after the sign-in that names no page answers 404: the browser logs it.
  browser.expectProblems((problem) => problem.kind === "console" && /status of 404/.test(problem.detail));
  await check(`/${org.slug}/${encodeURIComponent(payloadAt(0).text)}`, [], { status: 404 });
  await check(`/${encodeURIComponent(payloadAt(1).text)}`, [], { status: 404 });
  for (const next of [
    `javascript:${XSS_MARKER}('next')`,
    "//evil.example/",
    `/"><script>${XSS_MARKER}('next')</script>`,
  ]) {
    const visitor = await browser.person("visitor");
    const account = await arrangePerson();
    await signIn(visitor, account, next);
    expect(new URL(visitor.page.url()).origin).toBe(new URL(stack.apiUrl).origin);
    expect(await injectedMarkup(visitor.page)).toEqual([]);
  }
});
