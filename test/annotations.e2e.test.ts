import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, type RealAgent, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// The real buildkite-agent annotates builds from its jobs (styles, contexts with dots, append, priority, a style-only
// change, a job-scoped annotation, remove) and pauses, resumes and stops itself from inside a job; REST and
// go-buildkite (test/go-client/annotations-check) read the annotations and pause and resume the agent.

jest.setTimeout(180_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const checkBinary = join(cacheDir, "bin", "go-client-check", "annotations-check");

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let agentToken: string;
let repository: string;
let base: string;
let agent: RealAgent;

beforeAll(async () => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", checkBinary, "./annotations-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
  org = await arrangeOrgUser({
    scopes: ["read_builds", "write_builds", "write_pipelines", "read_build_logs", "read_agents", "write_agents"],
    role: Role.ADMIN,
  });
  clusterId = await arrangeCluster(org.organization.id);
  agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  repository = localRepository();
  base = `/v2/organizations/${org.organization.slug}`;
  agent = startAgent({ token: agentToken });
}, 300_000);
afterAll(stopAllAgents);

/** A pipeline with one command step running `command`; returns its slug. */
async function pipeline(command: string): Promise<string> {
  const res = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique("Annotations"),
    repository,
    cluster_id: clusterId,
    configuration: JSON.stringify({ steps: [{ label: "run", command }] }),
  });
  expect(res.status).toBe(201);
  return res.body.slug;
}

async function createBuild(slug: string): Promise<Json> {
  const res = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(res.status).toBe(201);
  return res.body;
}

async function getBuild(slug: string, number: number): Promise<Json> {
  return (await send("GET", `${base}/pipelines/${slug}/builds/${number}`, org.secret)).body;
}

function finished(slug: string, number: number): Promise<Json> {
  return eventually(`build ${slug}#${number} to finish`, async () => {
    const build = await getBuild(slug, number);
    return build.finished_at ? build : undefined;
  });
}

async function logText(slug: string, number: number, jobId: string): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${number}/jobs/${jobId}/log.txt`, {
    headers: { authorization: `Bearer ${org.secret}` },
  });
  return res.text();
}

/** The REST agent this suite started. */
async function ourAgent(): Promise<Json> {
  const list = await send("GET", `${base}/agents?name=${agent.name}`, org.secret);
  expect(list.body).toHaveLength(1);
  return list.body[0];
}

const ANNOTATE = [
  "set -e",
  'buildkite-agent annotate "Build **started**" --style info --context intro',
  'buildkite-agent annotate "first line" --context log.lines --style warning --priority 8',
  "buildkite-agent annotate \"$(printf '\\n\\nsecond line')\" --context log.lines --append",
  "printf '# Results\\n\\n| test | time |\\n| --- | ---: |\\n| unit | 2s |\\n\\n<script>alert(1)</script>\\n' | buildkite-agent annotate --style success --context results.v1 --priority 9",
  'buildkite-agent annotate "short-lived" --context remove.me --style error',
  "buildkite-agent annotation remove --context remove.me",
  'buildkite-agent annotate "mine alone" --context mine --scope job',
  'buildkite-agent annotate "" --style error --context intro </dev/null',
  'if buildkite-agent annotate "x" --style purple; then exit 3; fi',
  "if buildkite-agent annotation remove --context never.made; then exit 4; fi",
].join("\n");

describe("annotations from a real agent", () => {
  let slug: string;
  let build: Json;

  beforeAll(async () => {
    slug = await pipeline(ANNOTATE);
    build = await finished(slug, (await createBuild(slug)).number);
  });

  it("runs the annotating job to the end, the refused calls reported in its log", async () => {
    const log = await logText(slug, build.number, build.jobs[0].id);
    expect(build.state).toBe("passed");
    expect(log).toContain("is not one of success, info, warning, error");
    expect(log).toContain("No annotation found");
  });

  it("lists the build's annotations by priority then age, appended, restyled, rendered and sanitized", async () => {
    const res = await send("GET", `${base}/pipelines/${slug}/builds/${build.number}/annotations`, org.secret);
    expect(res.status).toBe(200);
    const list: Json[] = res.body;
    expect(list.map((a) => [a.context, a.style, a.priority])).toEqual([
      ["results.v1", "success", 9],
      ["intro", "error", 3],
      // The agent sends its default priority with every call: the append set it back to 3.
      ["log.lines", "warning", 3],
    ]);
    const [results, intro, lines] = list;
    expect(lines.body_html).toBe("<p>first line</p>\n<p>second line</p>\n");
    expect(intro.body_html).toBe("<p>Build <strong>started</strong></p>\n");
    expect(results.body_html).toContain("<h1>Results</h1>");
    expect(results.body_html).toContain('<td style="text-align:right">2s</td>');
    expect(results.body_html).not.toMatch(/script|alert/);
    for (const a of list) {
      expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(a.updated_at)).toBeGreaterThanOrEqual(Date.parse(a.created_at));
    }
    expect(Date.parse(intro.updated_at)).toBeGreaterThan(Date.parse(intro.created_at));
  });

  it("lists the job-scoped annotation under its job only", async () => {
    const path = `${base}/pipelines/${slug}/builds/${build.number}/jobs/${build.jobs[0].id}/annotations`;
    const res = await send("GET", path, org.secret);
    expect(res.body).toEqual([
      expect.objectContaining({ context: "mine", scope: "job", body_html: "<p>mine alone</p>\n" }),
    ]);
  });

  it("decodes with go-buildkite, page by page, and pauses and resumes the agent with it", async () => {
    const { id } = await ourAgent();
    const out = JSON.parse(
      execFileSync(checkBinary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CHECK_PIPELINE: slug,
          CHECK_BUILD: String(build.number),
          CHECK_JOB: build.jobs[0].id,
          CHECK_AGENT_ID: id,
        },
        encoding: "utf8",
      }),
    );
    expect(out.pages).toBe(2);
    expect(out.annotations.map((a: Json) => a.context)).toEqual(["results.v1", "intro", "log.lines"]);
    expect(out.annotations[2]).toMatchObject({
      style: "warning",
      priority: 3,
      body_html: expect.stringContaining("second line"),
    });
    expect(out.job_annotations).toEqual([expect.objectContaining({ context: "mine", scope: "job" })]);
    expect(out.pause_status).toBe(204);
    expect(out.pause_again_error).toBe("Agent is already paused");
    expect(out.paused).toMatchObject({
      paused: true,
      paused_note: "paused by go",
      paused_timeout_in_minutes: 15,
      paused_by: { id: org.user.id, email: org.user.email },
    });
    expect(out.resume_status).toBe(204);
    expect(out.resumed.paused).toBe(false);
    expect(out.resumed.paused_by).toBeUndefined();
  });
});

describe("pausing, resuming and stopping the agent from inside a job", () => {
  it("pauses itself with a note: it takes no new job until resumed over REST, then takes it", async () => {
    const pausing = await pipeline('buildkite-agent pause --note "cleaning up" --timeout-in-minutes 30');
    const paused = await finished(pausing, (await createBuild(pausing)).number);
    expect(paused.state).toBe("passed");
    expect(await ourAgent()).toMatchObject({
      connection_state: "connected",
      paused: true,
      paused_note: "cleaning up",
      paused_timeout_in_minutes: 30,
      paused_by: null,
    });

    const waiting = await pipeline("echo after the pause");
    const next = await createBuild(waiting);
    // The agent pings every second: a few pings later, the job still waits.
    await sleep(5_000);
    expect((await getBuild(waiting, next.number)).jobs[0].state).toBe("scheduled");

    const resume = await send("PUT", `${base}/agents/${(await ourAgent()).id}/resume`, org.secret, {});
    expect(resume.status).toBe(204);
    expect((await finished(waiting, next.number)).state).toBe("passed");
    expect((await ourAgent()).paused).toBe(false);
  });

  it("resumes itself from a job, and stops itself after its job", async () => {
    const { id } = await ourAgent();
    const resuming = await pipeline(
      [
        'buildkite-agent pause --note "a moment"',
        "buildkite-agent resume",
        // Not paused any more: a second resume is refused, with the reason in the log.
        "if buildkite-agent resume; then exit 5; fi",
      ].join("\n"),
    );
    const resumed = await finished(resuming, (await createBuild(resuming)).number);
    expect(resumed.state).toBe("passed");
    expect(await logText(resuming, resumed.number, resumed.jobs[0].id)).toContain("Agent is not paused");
    expect((await ourAgent()).paused).toBe(false);

    const stopping = await pipeline("buildkite-agent stop && echo asked to stop");
    const stopped = await finished(stopping, (await createBuild(stopping)).number);
    expect(stopped.state).toBe("passed");
    expect(await agent.exited).toBe(0);
    const after = await send("GET", `${base}/agents/${id}`, org.secret);
    expect(after.body.connection_state).toBe("stopped");
  });
});
