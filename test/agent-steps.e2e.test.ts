import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// The real buildkite-agent's step and build commands from inside a job (docs/compatibility.md#steps-from-inside-a-job):
// `step get` (an attribute, the whole step as JSON), `step update label` (replace, --append), a refused `step update
// priority`, `step cancel` of a step waiting for an agent, and `build cancel` of the job's own build; REST shows the
// effects, and the job's token reaches nothing once the job finished.

jest.setTimeout(240_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let repository: string;
let base: string;
let acquireToken: string;
const out = mkdtempSync(join(tmpdir(), "conveyor-steps-"));

beforeAll(async () => {
  org = await arrangeOrgUser({
    scopes: ["read_builds", "write_builds", "write_pipelines", "read_build_logs"],
    role: Role.ADMIN,
  });
  clusterId = await arrangeCluster(org.organization.id);
  const agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  acquireToken = agentToken;
  repository = localRepository();
  base = `/v2/organizations/${org.organization.slug}`;
  startAgent({ token: agentToken });
}, 300_000);
afterAll(stopAllAgents);

async function pipeline(steps: unknown[]): Promise<string> {
  const res = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique("Steps"),
    repository,
    cluster_id: clusterId,
    configuration: JSON.stringify({ steps }),
  });
  expect(res.status).toBe(201);
  return res.body.slug;
}

async function build(slug: string): Promise<Json> {
  const res = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(res.status).toBe(201);
  return res.body;
}

const getBuild = async (slug: string, number: number): Promise<Json> =>
  (await send("GET", `${base}/pipelines/${slug}/builds/${number}`, org.secret)).body;

const finished = (slug: string, number: number, timeoutMs = 90_000): Promise<Json> =>
  eventually(
    `build ${slug}#${number} to finish`,
    async () => {
      const b = await getBuild(slug, number);
      return b.finished_at ? b : undefined;
    },
    timeoutMs,
  );

async function logText(slug: string, number: number, jobId: string): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${number}/jobs/${jobId}/log.txt`, {
    headers: { authorization: `Bearer ${org.secret}` },
  });
  return res.text();
}

const STEPS = [
  "set -eu",
  'test "$(buildkite-agent step get label --step later)" = "Later"',
  'test "$(buildkite-agent step get state --step later)" = "ready"',
  'buildkite-agent step update label " (updated)" --append --step later',
  'buildkite-agent step update label "Main step"',
  'test "$(buildkite-agent step get label --step later)" = "Later (updated)"',
  'buildkite-agent step get --format json --step later > "$OUT/later.json"',
  "if buildkite-agent step update priority 10 --step later; then exit 3; fi",
  "if buildkite-agent step get label --step nowhere; then exit 4; fi",
  "buildkite-agent step cancel --step later",
  'test "$(buildkite-agent step get state --step later)" = "finished"',
  'test "$(buildkite-agent step get outcome --step later)" = "hard_failed"',
  'printf %s "$BUILDKITE_AGENT_ACCESS_TOKEN" > "$OUT/token"',
  'printf %s "$BUILDKITE_STEP_ID" > "$OUT/step"',
].join("\n");

describe("buildkite-agent step commands from a real job", () => {
  let slug: string;
  let done: Json;

  beforeAll(async () => {
    slug = await pipeline([
      // No agent has this tag: the step waits for one until it is canceled.
      { key: "later", label: "Later", command: "true", agents: { conveyor_e2e_never: "true" } },
      { key: "main", label: "Main", command: STEPS, env: { OUT: out } },
    ]);
    done = await finished(slug, (await build(slug)).number);
  });

  it("runs every command as Buildkite would, the refusals reported in the log", async () => {
    const main = done.jobs.find((j: Json) => j.step_key === "main");
    const log = await logText(slug, done.number, main.id);
    expect({ state: main.state, exit: main.exit_status }).toEqual({ state: "passed", exit: 0 });
    expect(log).toContain("can't update priority");
    expect(log).toContain("No step found");
  });

  it("shows the new labels and the canceled step over REST", () => {
    const later = done.jobs.find((j: Json) => j.step_key === "later");
    const main = done.jobs.find((j: Json) => j.step_key === "main");
    expect({ label: later.label, name: later.name, state: later.state }).toEqual({
      label: "Later (updated)",
      name: "Later (updated)",
      state: "canceled",
    });
    expect(main.label).toBe("Main step");
    // A canceled step is a hard failure, as on Buildkite.
    expect(done.state).toBe("failed");
  });

  it("printed the whole step as JSON", () => {
    const step = JSON.parse(readFileSync(join(out, "later.json"), "utf8"));
    expect(step).toMatchObject({
      key: "later",
      label: "Later (updated)",
      type: "command",
      state: "ready",
      outcome: "neutral",
    });
    expect(step.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("refuses the job's token once the job finished", async () => {
    const token = readFileSync(join(out, "token"), "utf8");
    const stepId = readFileSync(join(out, "step"), "utf8");
    const res = await fetch(`${stack.agentUrl}/steps/${stepId}/export`, {
      method: "POST",
      headers: { authorization: `Token ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ attribute: "label" }),
    });
    expect(res.status).toBe(401);
  });
});

describe("buildkite-agent build cancel from a real job", () => {
  it("cancels the job's own build, the job stopped by its agent", async () => {
    const slug = await pipeline([
      { label: "cancel me", command: "buildkite-agent build cancel\nsleep 60" },
      "wait",
      { label: "never", command: "true" },
    ]);
    const started = Date.now();
    const done = await finished(slug, (await build(slug)).number, 60_000);
    expect(done.state).toBe("canceled");
    const [first, , never] = done.jobs;
    expect(first.state).toBe("canceled");
    expect(never.state).toBe("canceled");
    // Stopped by the cancel, long before its sleep ended.
    expect(Date.now() - started).toBeLessThan(50_000);
  });
});

describe("buildkite-agent job promise-failure from a real job", () => {
  it("fails the build while the job runs, and the job with the promised status though it exits 0", async () => {
    const slug = await pipeline([
      {
        label: "promise",
        command: [
          "set -eu",
          'buildkite-agent job promise-failure 3 --reason "tests failed"',
          "buildkite-agent job promise-failure 3",
          "if buildkite-agent job promise-failure 4; then exit 9; fi",
          "sleep 6",
          "exit 0",
        ].join("\n"),
      },
    ]);
    const { number } = await build(slug);
    const failing = await eventually("the build to be failing while its job runs", async () => {
      const b = await getBuild(slug, number);
      return b.state === "failing" && b.jobs[0].state === "running" ? b : undefined;
    });
    expect(failing.finished_at).toBeNull();
    const done = await finished(slug, number);
    expect(done.state).toBe("failed");
    expect({ state: done.jobs[0].state, exit: done.jobs[0].exit_status }).toEqual({ state: "failed", exit: 3 });
    const log = await logText(slug, number, done.jobs[0].id);
    expect(log).toContain("a different promised exit status has already been declared");
  });
});

describe("buildkite-agent start --acquire-job", () => {
  it("takes the named job once its dependency finished (423 until then), runs it, and exits", async () => {
    const tag = unique("acquire").toLowerCase();
    const slug = await pipeline([
      { key: "first", label: "first", command: "sleep 4" },
      { key: "named", label: "named", command: "echo acquired", depends_on: "first", agents: { acquire: tag } },
    ]);
    const created = await build(slug);
    const named = created.jobs.find((j: Json) => j.step_key === "named");
    const acquirer = startAgent({ token: acquireToken, tags: [`acquire=${tag}`], args: ["--acquire-job", named.id] });
    const done = await finished(slug, created.number);
    expect(done.state).toBe("passed");
    const job = done.jobs.find((j: Json) => j.step_key === "named");
    expect({ state: job.state, agent: job.agent?.name }).toEqual({ state: "passed", agent: acquirer.name });
    expect(await acquirer.exited).toBe(0);
    expect(acquirer.log()).toContain("waiting for a dependency");
  });
});
