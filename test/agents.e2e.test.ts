import { createHash } from "node:crypto";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, type RealAgent, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// The real, unmodified buildkite-agent against the stack: builds run, pass and fail with their exit statuses,
// logs read back over REST as the commands printed them, values pass between steps as meta-data, parallel jobs
// spread over agents, a running job is canceled, and the metrics endpoint counts agents and jobs.

jest.setTimeout(120_000);

const SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_organizations",
  "read_build_logs",
  "write_build_logs",
  "read_agents",
  "write_agents",
];

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let agentToken: string;
let repository: string;
let base: string;

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  clusterId = await arrangeCluster(org.organization.id);
  const created = await agents.createAgentToken({ organizationId: org.organization.id, clusterId, description: "e2e" });
  agentToken = created.secret;
  repository = localRepository({ "README.md": "# conveyor e2e\n", "greeting.txt": "hello from the checkout\n" });
  base = `/v2/organizations/${org.organization.slug}`;
});
afterAll(stopAllAgents);

/** Creates a pipeline of the test repository with the given YAML and returns its slug. */
async function pipeline(configuration: string): Promise<string> {
  const res = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique("Agents"),
    repository,
    cluster_id: clusterId,
    configuration,
  });
  expect(res.status).toBe(201);
  return res.body.slug;
}

async function createBuild(slug: string, extra: Record<string, unknown> = {}): Promise<Json> {
  const res = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, {
    commit: "HEAD",
    branch: "main",
    message: "e2e",
    ...extra,
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function getBuild(slug: string, number: number): Promise<Json> {
  const res = await send("GET", `${base}/pipelines/${slug}/builds/${number}`, org.secret);
  expect(res.status).toBe(200);
  return res.body;
}

/** Waits until the build is finished (finished_at set) and returns it. */
function finished(slug: string, number: number, timeoutMs = 60_000): Promise<Json> {
  return eventually(
    `build ${slug}#${number} to finish`,
    async () => {
      const build = await getBuild(slug, number);
      return build.finished_at ? build : undefined;
    },
    timeoutMs,
  );
}

async function logText(slug: string, number: number, jobId: string): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${number}/jobs/${jobId}/log.txt`, {
    headers: { authorization: `Bearer ${org.secret}` },
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
  return res.text();
}

/** The agent's ANSI timestamp escapes (ESC _bk;t=… BEL), which it puts at the start of each line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the agent's log format uses these escapes
const TIMESTAMPS = /\u001b_bk;t=\d+\u0007/g;

describe("builds on the real buildkite-agent", () => {
  let agent: RealAgent;
  beforeAll(() => {
    agent = startAgent({ token: agentToken, tags: ["queue=default", "e2e=yes"] });
  });

  it("runs a build that passes, passes values between steps as meta-data, and keeps each job's log", async () => {
    const slug = await pipeline(`steps:
  - label: ":wave: produce"
    key: produce
    command: |
      echo "marker-one $BUILDKITE_BUILD_NUMBER"
      cat greeting.txt
      buildkite-agent meta-data set greeting "hello-$BUILDKITE_BUILD_NUMBER"
  - wait
  - label: ":ear: consume"
    command: |
      value=$(buildkite-agent meta-data get greeting)
      test "$value" = "hello-$BUILDKITE_BUILD_NUMBER"
      echo "consumed $value"
      buildkite-agent meta-data exists missing-key || echo "no missing-key"
      echo "default: $(buildkite-agent meta-data get missing-key --default fallback)"
`);
    const created = await createBuild(slug);
    const build = await finished(slug, created.number);
    expect(build.state).toBe("passed");
    expect(build.meta_data).toMatchObject({ greeting: `hello-${build.number}` });
    const [produce, waiter, consume] = build.jobs;
    for (const job of [produce, consume]) {
      expect(job).toMatchObject({ state: "passed", exit_status: 0 });
      expect(job.agent).toMatchObject({ name: agent.name, connection_state: "connected" });
      expect(Date.parse(job.started_at)).toBeLessThanOrEqual(Date.parse(job.finished_at));
    }
    expect(waiter).toMatchObject({ type: "waiter", state: "passed" });

    const producedLog = (await logText(slug, build.number, produce.id)).replace(TIMESTAMPS, "");
    expect(producedLog).toContain(`marker-one ${build.number}`);
    expect(producedLog).toContain("hello from the checkout");
    const consumedLog = (await logText(slug, build.number, consume.id)).replace(TIMESTAMPS, "");
    expect(consumedLog).toContain(`consumed hello-${build.number}`);
    expect(consumedLog).toContain("no missing-key");
    expect(consumedLog).toContain("default: fallback");

    // The JSON form carries the same bytes, and their size.
    const json = await send(
      "GET",
      `${base}/pipelines/${slug}/builds/${build.number}/jobs/${produce.id}/log`,
      org.secret,
    );
    expect(json.status).toBe(200);
    const raw = await logText(slug, build.number, produce.id);
    expect(json.body).toMatchObject({ content: raw, size: Buffer.byteLength(raw) });
    expect(json.body.url).toBe(
      `${stack.apiUrl}${base}/pipelines/${slug}/builds/${build.number}/jobs/${produce.id}/log`,
    );
    expect(Array.isArray(json.body.header_times)).toBe(true);
  });

  it("fails a job with its command's exit status, and the build with it", async () => {
    const slug = await pipeline("steps:\n  - label: fails\n    command: echo about to fail && exit 3\n");
    const build = await finished(slug, (await createBuild(slug)).number);
    expect(build.state).toBe("failed");
    expect(build.jobs[0]).toMatchObject({ state: "failed", exit_status: 3, soft_failed: false });
    expect(await logText(slug, build.number, build.jobs[0].id)).toContain("about to fail");
  });

  it("gives the job the environment the bootstrap needs, with the step's and build's env", async () => {
    const slug = await pipeline(`env:
  FROM_YAML: yaml
steps:
  - label: env
    key: show-env
    env:
      FROM_STEP: step
    command: |
      echo "repo=$BUILDKITE_REPO commit=$BUILDKITE_COMMIT branch=$BUILDKITE_BRANCH"
      echo "org=$BUILDKITE_ORGANIZATION_SLUG pipeline=$BUILDKITE_PIPELINE_SLUG key=$BUILDKITE_STEP_KEY"
      echo "tags=$BUILDKITE_AGENT_META_DATA_E2E vars=$FROM_YAML/$FROM_BUILD/$FROM_STEP"
`);
    const build = await finished(slug, (await createBuild(slug, { env: { FROM_BUILD: "build" } })).number);
    expect(build.state).toBe("passed");
    const log = (await logText(slug, build.number, build.jobs[0].id)).replace(TIMESTAMPS, "");
    expect(log).toContain(`repo=${repository} commit=HEAD branch=main`);
    expect(log).toContain(`org=${org.organization.slug} pipeline=${slug} key=show-env`);
    expect(log).toContain("tags=yes vars=yaml/build/step");
  });

  it("cancels a running job: the agent stops it and it ends canceled", async () => {
    const slug = await pipeline("steps:\n  - label: long\n    command: sleep 600\n");
    const created = await createBuild(slug);
    await eventually("the job to run", async () => {
      const build = await getBuild(slug, created.number);
      return build.jobs[0].state === "running" ? build : undefined;
    });
    const canceled = await send("PUT", `${base}/pipelines/${slug}/builds/${created.number}/cancel`, org.secret);
    expect(canceled.status).toBe(200);
    expect(canceled.body.state).toBe("canceling");
    expect(canceled.body.jobs[0].state).toBe("canceling");
    const build = await finished(slug, created.number, 30_000);
    expect(build.state).toBe("canceled");
    expect(build.jobs[0].state).toBe("canceled");
    expect(build.jobs[0].exit_status).not.toBe(0);
  });
});

describe("several agents", () => {
  it("spreads parallel jobs over two agents, each job run once", async () => {
    const agentsOf = [
      startAgent({ token: agentToken, tags: ["queue=parallel"] }),
      startAgent({ token: agentToken, tags: ["queue=parallel"] }),
    ];
    const slug = await pipeline(`steps:
  - label: shard
    command: echo "shard $BUILDKITE_PARALLEL_JOB of $BUILDKITE_PARALLEL_JOB_COUNT" && sleep 3
    parallelism: 4
    agents:
      queue: parallel
`);
    const build = await finished(slug, (await createBuild(slug)).number, 90_000);
    expect(build.state).toBe("passed");
    expect(build.jobs.map((j: Json) => j.parallel_group_index).sort()).toEqual([0, 1, 2, 3]);
    expect(new Set(build.jobs.map((j: Json) => j.agent.name))).toEqual(new Set(agentsOf.map((a) => a.name)));
    for (const job of build.jobs) {
      const log = (await logText(slug, build.number, job.id)).replace(TIMESTAMPS, "");
      expect(log).toContain(`shard ${job.parallel_group_index} of 4`);
    }
  });
});

describe("a large log", () => {
  it("round-trips 10 MB byte for byte", async () => {
    // No PTY (which would turn \n into \r\n) and no timestamp escapes: the log holds exactly what was printed.
    const bulkAgent = startAgent({
      token: agentToken,
      tags: ["queue=bulk"],
      args: ["--no-pty", "--no-ansi-timestamps"],
    });
    const line = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ +-*/ the quick brown fox\n";
    const lines = Math.ceil((10 * 1024 * 1024) / line.length);
    const slug = await pipeline(`steps:
  - label: bulk
    command: 'echo BEGIN; yes "${line.trimEnd()}" | head -n ${lines}; echo END'
    agents:
      queue: bulk
`);
    const build = await finished(slug, (await createBuild(slug)).number, 90_000);
    expect(build.state).toBe("passed");
    const log = await logText(slug, build.number, build.jobs[0].id);
    const start = log.indexOf("BEGIN\n") + "BEGIN\n".length;
    const end = log.indexOf("END\n", start);
    const expected = line.repeat(lines);
    const sha = (s: string) => createHash("sha256").update(s).digest("hex");
    if (end - start !== expected.length) {
      // Once seen (not reproduced in loops since): a passed job whose log.txt lacked its first and last lines. Say
      // what came back and what the agent said about its chunks, so that the next occurrence explains itself.
      const job = await send("GET", `${base}/pipelines/${slug}/builds/${build.number}`, org.secret);
      const chunkLines = bulkAgent
        .log()
        .split("\n")
        .filter((l) => /chunk|upload|rejected|WARN|ERROR/i.test(l))
        .slice(-20);
      throw new Error(
        [
          `log.txt holds ${log.length} bytes (BEGIN at ${log.indexOf("BEGIN\n")}, END at ${log.indexOf("END\n")}), expected ${expected.length} between them`,
          `head: ${JSON.stringify(log.slice(0, 200))}`,
          `tail: ${JSON.stringify(log.slice(-200))}`,
          `job: ${JSON.stringify((job.body as { jobs?: unknown[] }).jobs?.[0])}`,
          `agent log lines about chunks:\n${chunkLines.join("\n")}`,
        ].join("\n"),
      );
    }
    expect(end - start).toBe(expected.length);
    expect(sha(log.slice(start, end))).toBe(sha(expected));
    const json = await send(
      "GET",
      `${base}/pipelines/${slug}/builds/${build.number}/jobs/${build.jobs[0].id}/log`,
      org.secret,
    );
    expect(json.body.size).toBe(Buffer.byteLength(log));
    expect(sha(json.body.content)).toBe(sha(log));

    const deleted = await send(
      "DELETE",
      `${base}/pipelines/${slug}/builds/${build.number}/jobs/${build.jobs[0].id}/log`,
      org.secret,
    );
    expect(deleted.status).toBe(204);
    expect(await logText(slug, build.number, build.jobs[0].id)).toBe("");
  });
});

describe("the metrics endpoint and the agents API", () => {
  it("counts idle and busy agents and scheduled, running and waiting jobs per queue", async () => {
    startAgent({ token: agentToken, tags: ["queue=metrics"] });
    const slug = await pipeline(`steps:
  - label: busy
    command: sleep 20
    agents:
      queue: metrics
  - label: nobody
    command: "true"
    agents:
      queue: metrics-unserved
  - wait
  - label: later
    command: "true"
    agents:
      queue: metrics
`);
    const created = await createBuild(slug);
    const metrics = await eventually("the metrics to show the running job", async () => {
      const res = await fetch(`${stack.agentUrl}/metrics`, { headers: { authorization: `Token ${agentToken}` } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Json;
      return body.jobs.queues.metrics?.running === 1 ? body : undefined;
    });
    expect(metrics.organization).toEqual({ slug: org.organization.slug });
    expect(metrics.agents.queues.metrics).toEqual({ idle: 0, busy: 1, total: 1 });
    expect(metrics.jobs.queues["metrics-unserved"]).toEqual({ scheduled: 1, running: 0, waiting: 0, total: 1 });
    expect(metrics.jobs.queues.metrics).toEqual({ scheduled: 0, running: 1, waiting: 1, total: 2 });
    for (const key of ["idle", "busy", "total"]) expect(Number.isInteger(metrics.agents[key])).toBe(true);
    for (const key of ["scheduled", "running", "waiting", "total"])
      expect(Number.isInteger(metrics.jobs[key])).toBe(true);

    const unknown = await fetch(`${stack.agentUrl}/metrics`, { headers: { authorization: "Token bkat_nope" } });
    expect(unknown.status).toBe(401);
    await send("PUT", `${base}/pipelines/${slug}/builds/${created.number}/cancel`, org.secret);
  });

  it("lists and gets connected agents, and stops one over REST", async () => {
    const agent = startAgent({ token: agentToken, tags: ["queue=stoppable"] });
    // Registered agents are listed before they connect: wait for the connection.
    const listed = await eventually("the agent to be listed as connected", async () => {
      const res = await send("GET", `${base}/agents?name=${agent.name}`, org.secret);
      return res.body?.length === 1 && res.body[0].connection_state === "connected" ? res.body[0] : undefined;
    });
    expect(listed).toMatchObject({ name: agent.name, connection_state: "connected", meta_data: ["queue=stoppable"] });
    const one = await send("GET", `${base}/agents/${listed.id}`, org.secret);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: listed.id, name: agent.name, job: null });
    expect(one.body).not.toHaveProperty("access_token");

    const stop = await send("PUT", `${base}/agents/${listed.id}/stop`, org.secret, { force: true });
    expect(stop.status).toBe(204);
    expect(await agent.exited).toBe(0);
    const after = await send("GET", `${base}/agents/${listed.id}`, org.secret);
    expect(after.body.connection_state).toBe("stopped");
    const gone = await send("GET", `${base}/agents?name=${agent.name}`, org.secret);
    expect(gone.body).toEqual([]);
  });
});
