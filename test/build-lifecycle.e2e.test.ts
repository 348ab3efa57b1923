import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { ciAdminJson } from "./support/ci-admin.js";
import { eventually, localRepository, type RealAgent, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// The build lifecycle as a new user meets it, on the real buildkite-agent and the whole stack: a deploy pipeline
// waiting at a block step unblocked over REST with fields that a later step reads as meta-data, a flaky step that
// passes on its second automatic retry, a soft-failing lint, a step generating more steps with `pipeline upload`
// (and one whose upload is refused), triggers of a second pipeline (sync, async, across clusters with and without
// a rule), a step that times out, and an agent killed mid-job whose job is retried on another agent. Every build is
// started at once in beforeAll (the timeout first: it takes over a minute) and asserted in turn; go-buildkite
// (test/go-client/lifecycle-check) decodes the results at the end and retries a failed job by hand.
// Agents: two in queue `default`, and in queue `lost` one that is killed and one that takes over its job.

jest.setTimeout(240_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

const SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_build_logs",
  "read_agents",
  "read_job_env",
  "read_rules",
  "write_rules",
];
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const checkBinary = join(cacheDir, "bin", "go-client-check", "lifecycle-check");

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let base: string;
let repository: string;
let clusterId: string;
let agentToken: string;

/** Creates a pipeline of the test repository in `cluster` (by default the suite's) and returns it. */
async function pipeline(name: string, steps: Json[], cluster = clusterId): Promise<Json> {
  const res = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique(name),
    repository,
    cluster_id: cluster,
    configuration: JSON.stringify({ steps }),
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function createBuild(slug: string): Promise<Json> {
  const res = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, {
    commit: "HEAD",
    branch: "main",
    message: "lifecycle",
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function getBuild(slug: string, number: number, query = ""): Promise<Json> {
  const res = await send("GET", `${base}/pipelines/${slug}/builds/${number}${query}`, org.secret);
  expect(res.status).toBe(200);
  return res.body;
}

/** Waits until the build is finished and returns it with its retried jobs. */
async function finished(slug: string, number: number, timeoutMs = 150_000): Promise<Json> {
  await eventually(
    `build ${slug}#${number} to finish`,
    async () => ((await getBuild(slug, number)).finished_at ? true : undefined),
    timeoutMs,
  );
  return getBuild(slug, number, "?include_retried_jobs=true");
}

async function logText(slug: string, number: number, jobId: string): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${number}/jobs/${jobId}/log.txt`, {
    headers: { authorization: `Bearer ${org.secret}` },
  });
  expect(res.status).toBe(200);
  return res.text();
}

const byLabel = (build: Json, label: string): Json[] => build.jobs.filter((j: Json) => j.label === label);

/** The result of a scenario started in beforeAll, awaited by its test; a failure surfaces there, not unhandled. */
function started<T>(scenario: () => Promise<T>): Promise<T> {
  const promise = scenario();
  promise.catch(() => undefined);
  return promise;
}

interface Scenarios {
  timeout: Promise<{ slug: string; build: Json }>;
  deploy: Promise<{ slug: string; blocked: Json; refused: Json; unblocked: Json; build: Json; log: string }>;
  flaky: Promise<{ slug: string; build: Json; logs: string[] }>;
  lint: Promise<{ slug: string; build: Json }>;
  upload: Promise<{ slug: string; build: Json }>;
  badUpload: Promise<{ slug: string; build: Json; log: string }>;
  triggers: Promise<{ target: Json; sync: Json; async: Json; syncChild: Json; asyncChild: Json; childLog: string }>;
  lost: Promise<{ slug: string; build: Json; doomed: RealAgent; rescuer: RealAgent }>;
}
let scenarios: Scenarios;
let far: Json;
let crossClusterId: string;

beforeAll(async () => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", checkBinary, "./lifecycle-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  base = `/v2/organizations/${org.organization.slug}`;
  repository = localRepository();
  clusterId = await arrangeCluster(org.organization.id);
  agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  // The second cluster, as an administrator makes one; nothing runs there.
  crossClusterId = (
    await ciAdminJson("cluster", "create", "--org", org.organization.slug, "--name", unique("Far Away"))
  ).id;

  // The slow one first: `sleep 600` with a one-minute timeout ends timed_out after a little over a minute.
  const slow = await pipeline("Slow", [{ label: "slow", command: "sleep 600", timeout_in_minutes: 1 }]);
  const slowBuild = await createBuild(slow.slug);
  for (let i = 0; i < 2; i++) startAgent({ token: agentToken });
  const doomed = startAgent({ token: agentToken, tags: ["queue=lost"] });

  scenarios = {
    timeout: started(async () => ({ slug: slow.slug, build: await finished(slow.slug, slowBuild.number) })),
    deploy: started(deployScenario),
    flaky: started(flakyScenario),
    lint: started(lintScenario),
    upload: started(uploadScenario),
    badUpload: started(badUploadScenario),
    triggers: started(triggerScenario),
    lost: started(() => lostScenario(doomed)),
  };
  far = await pipeline("Far Target", [{ label: "far-job", command: "true" }], crossClusterId);
}, 300_000);
afterAll(stopAllAgents);

async function deployScenario() {
  const p = await pipeline("Deploy", [
    { label: "build", command: "echo building" },
    {
      block: "Deploy?",
      key: "deploy-gate",
      fields: [
        { text: "Release", key: "release-name", format: "v[0-9]+\\.[0-9]+\\.[0-9]+" },
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
    {
      label: "deploy",
      command:
        'echo "deploying $(buildkite-agent meta-data get release-name) to $(buildkite-agent meta-data get region)"',
    },
  ]);
  const { number } = await createBuild(p.slug);
  const blocked = await eventually(
    "the deploy build to wait at its block step",
    async () => {
      const b = await getBuild(p.slug, number);
      return b.blocked ? b : undefined;
    },
    120_000,
  );
  const gate = byLabel(blocked, "Deploy?")[0];
  const unblock = (fields: Record<string, string>) =>
    send("PUT", `${base}/pipelines/${p.slug}/builds/${number}/jobs/${gate.id}/unblock`, org.secret, { fields });
  const refused = await unblock({ "release-name": "latest", region: "eu" });
  const unblocked = await unblock({ "release-name": "v1.2.3", region: "eu" });
  const build = await finished(p.slug, number);
  const log = await logText(p.slug, number, byLabel(build, "deploy")[0].id);
  return { slug: p.slug, blocked, refused, unblocked, build, log };
}

async function flakyScenario() {
  const p = await pipeline("Flaky", [
    {
      label: "flaky",
      command: 'echo "attempt $BUILDKITE_RETRY_COUNT"; if [ "$BUILDKITE_RETRY_COUNT" -lt 2 ]; then exit 3; fi',
      retry: { automatic: [{ exit_status: 3, limit: 2 }] },
    },
  ]);
  const { number } = await createBuild(p.slug);
  const build = await finished(p.slug, number);
  const logs = await Promise.all(byLabel(build, "flaky").map((j: Json) => logText(p.slug, number, j.id)));
  return { slug: p.slug, build, logs };
}

async function lintScenario() {
  const p = await pipeline("Lint", [
    { label: "lint", command: "echo 'style problems'; exit 7", soft_fail: [{ exit_status: 7 }] },
    { label: "test", command: "true" },
  ]);
  const { number } = await createBuild(p.slug);
  return { slug: p.slug, build: await finished(p.slug, number) };
}

/** The generated pipeline: two steps recording that they ran. The agent interpolates $ in uploads: none here. */
const GENERATED = [
  "steps:",
  "  - label: generated-one",
  "    command: buildkite-agent meta-data set generated-one done",
  "  - label: generated-two",
  "    command: buildkite-agent meta-data set generated-two done",
].join("\n");

async function uploadScenario() {
  const p = await pipeline("Dynamic", [
    {
      label: "generate",
      command: `cat > generated.yml <<'YAML'\n${GENERATED}\nYAML\nbuildkite-agent pipeline upload generated.yml`,
    },
    "wait",
    {
      label: "after-wait",
      command:
        'test "$(buildkite-agent meta-data get generated-one)" = done && test "$(buildkite-agent meta-data get generated-two)" = done',
    },
  ]);
  const { number } = await createBuild(p.slug);
  return { slug: p.slug, build: await finished(p.slug, number) };
}

async function badUploadScenario() {
  // Valid YAML the agent passes on as it is; the server refuses two of its attributes.
  const bad = JSON.stringify({
    steps: [{ label: "bad", command: "true", parallelism: 0, timeout_in_minutes: "soon" }],
  });
  const p = await pipeline("Bad Upload", [
    { label: "bad-upload", command: `echo '${bad}' | buildkite-agent pipeline upload` },
  ]);
  const { number } = await createBuild(p.slug);
  const build = await finished(p.slug, number);
  return { slug: p.slug, build, log: await logText(p.slug, number, build.jobs[0].id) };
}

async function triggerScenario() {
  const target = await pipeline("Downstream", [
    {
      label: "downstream-job",
      command: 'echo "stage $STAGE from $BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG"; test "$STAGE" = prod',
    },
  ]);
  const trigger = (extra: Json) => ({
    trigger: target.slug,
    label: "Run downstream",
    build: { message: "triggered", env: { STAGE: "prod" } },
    ...extra,
  });
  const syncPipeline = await pipeline("Upstream Sync", [trigger({})]);
  const asyncPipeline = await pipeline("Upstream Async", [trigger({ async: true })]);
  const [syncStarted, asyncStarted] = await Promise.all([
    createBuild(syncPipeline.slug),
    createBuild(asyncPipeline.slug),
  ]);
  const [sync, async] = await Promise.all([
    finished(syncPipeline.slug, syncStarted.number),
    finished(asyncPipeline.slug, asyncStarted.number),
  ]);
  const childOf = (b: Json) => b.jobs[0].triggered_build;
  const [syncChild, asyncChild] = await Promise.all([
    finished(target.slug, childOf(sync).number),
    finished(target.slug, childOf(async).number),
  ]);
  const childLog = await logText(target.slug, syncChild.number, syncChild.jobs[0].id);
  return { target, sync, async, syncChild, asyncChild, childLog };
}

async function lostScenario(doomed: RealAgent) {
  const p = await pipeline("Survivor", [
    {
      label: "survivor",
      command: 'if [ "$BUILDKITE_RETRY_COUNT" = 0 ]; then sleep 45; fi; echo "attempt $BUILDKITE_RETRY_COUNT done"',
      agents: { queue: "lost" },
      retry: { automatic: [{ exit_status: -1, limit: 1 }] },
    },
  ]);
  const { number } = await createBuild(p.slug);
  await eventually(
    "the survivor job to run on the doomed agent",
    async () => ((await getBuild(p.slug, number)).jobs[0].state === "running" ? true : undefined),
    120_000,
  );
  doomed.kill("SIGKILL");
  // Another agent of the queue takes the retry once the server has noticed the loss.
  const rescuer = startAgent({ token: agentToken, tags: ["queue=lost"] });
  return { slug: p.slug, build: await finished(p.slug, number), doomed, rescuer };
}

describe("the build lifecycle on real agents", () => {
  it("waits at a block step until it is unblocked over REST with fields, which a later step reads", async () => {
    const { blocked, refused, unblocked, build, log } = await scenarios.deploy;
    expect(blocked).toMatchObject({ state: "passed", blocked: true });
    expect(byLabel(blocked, "Deploy?")[0]).toMatchObject({ state: "blocked", unblockable: true });
    expect(byLabel(blocked, "deploy")[0].state).toBe("waiting");
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({
      message: "Validation Failed",
      errors: [{ field: "fields.release-name", code: expect.stringContaining("must match the format") }],
    });
    expect(unblocked.status).toBe(200);
    expect(unblocked.body).toMatchObject({
      state: "unblocked",
      unblockable: false,
      unblocked_by: { id: org.user.id, email: org.user.email },
    });
    expect(build).toMatchObject({
      state: "passed",
      blocked: false,
      meta_data: { "release-name": "v1.2.3", region: "eu" },
    });
    expect(build.jobs.map((j: Json) => [j.label, j.state, j.exit_status])).toEqual([
      ["build", "passed", 0],
      ["Deploy?", "unblocked", null],
      ["deploy", "passed", 0],
    ]);
    expect(log).toContain("deploying v1.2.3 to eu");
  });

  it("passes a flaky step on its second automatic retry, every attempt kept", async () => {
    const { build, logs } = await scenarios.flaky;
    expect(build.state).toBe("passed");
    const [first, second, third] = byLabel(build, "flaky");
    expect([first, second, third].map((j) => [j.state, j.exit_status, j.retried, j.retries_count])).toEqual([
      ["failed", 3, true, null],
      ["failed", 3, true, 1],
      ["passed", 0, false, 2],
    ]);
    expect(first).toMatchObject({ retried_in_job_id: second.id, retry_type: "automatic", retry_source: null });
    expect(second).toMatchObject({
      retried_in_job_id: third.id,
      retry_type: "automatic",
      retry_source: { job_id: first.id, retry_type: "automatic" },
    });
    expect(third).toMatchObject({
      retry_source: { job_id: second.id, retry_type: "automatic" },
      retry_type: "automatic",
    });
    expect(logs.map((l) => /attempt (\d)/.exec(l)?.[1])).toEqual(["0", "1", "2"]);
    // Without include_retried_jobs only the last attempt shows.
    const shown = await getBuild((await scenarios.flaky).slug, build.number);
    expect(shown.jobs.map((j: Json) => j.id)).toEqual([third.id]);
  });

  it("lets a build pass around a soft-failing lint", async () => {
    const { build } = await scenarios.lint;
    expect(build.state).toBe("passed");
    expect(byLabel(build, "lint")[0]).toMatchObject({ state: "failed", exit_status: 7, soft_failed: true });
    expect(byLabel(build, "test")[0]).toMatchObject({ state: "passed", soft_failed: false });
  });

  it("runs the steps a job uploads before the step behind the next wait", async () => {
    const { build } = await scenarios.upload;
    expect(build.state).toBe("passed");
    expect(build.jobs.map((j: Json) => [j.type === "waiter" ? "wait" : j.label, j.state])).toEqual([
      ["generate", "passed"],
      ["generated-one", "passed"],
      ["generated-two", "passed"],
      ["wait", "passed"],
      ["after-wait", "passed"],
    ]);
    expect(build.meta_data).toMatchObject({ "generated-one": "done", "generated-two": "done" });
    const afterWait = byLabel(build, "after-wait")[0];
    for (const label of ["generated-one", "generated-two"])
      expect(Date.parse(byLabel(build, label)[0].finished_at)).toBeLessThanOrEqual(Date.parse(afterWait.started_at));
  });

  it("fails a step whose upload the server refuses, with every problem in its log", async () => {
    const { build, log } = await scenarios.badUpload;
    expect(build.state).toBe("failed");
    expect(build.jobs).toHaveLength(1);
    expect(build.jobs[0]).toMatchObject({ state: "failed" });
    expect(build.jobs[0].exit_status).not.toBe(0);
    // The agent uploads asynchronously and polls: the refusal arrives as the upload's `rejected` state, which it
    // prints with the message and does not retry.
    expect(log).toContain("pipeline upload rejected: The pipeline could not be uploaded:");
    expect(log).toContain("Unrecoverable error, skipping retries");
    expect(log).toContain('timeout_in_minutes must be a positive integer, got "soon"');
    expect(log).toContain("parallelism must be an integer from 1 to 500, got 0");
  });

  it("triggers a second pipeline: a sync trigger follows the child build, an async one passes at once", async () => {
    const { target, sync, async, syncChild, asyncChild, childLog } = await scenarios.triggers;
    for (const [parent, child] of [
      [sync, syncChild],
      [async, asyncChild],
    ]) {
      expect(parent.state).toBe("passed");
      const job = parent.jobs[0];
      expect(job).toMatchObject({ type: "trigger", state: "passed", label: "Run downstream" });
      expect(job.triggered_build).toEqual({
        id: child.id,
        number: child.number,
        url: expect.stringContaining(`${base}/pipelines/${target.slug}/builds/${child.number}`),
        web_url: expect.stringContaining(`/${target.slug}/builds/${child.number}`),
      });
      expect(child).toMatchObject({
        state: "passed",
        source: "trigger_job",
        message: "triggered",
        env: { STAGE: "prod" },
        triggered_from: { build_id: parent.id, build_number: parent.number, build_pipeline_slug: parent.pipeline.slug },
        creator: { id: org.user.id },
      });
    }
    // The sync trigger finished only after its child build did; the async one did not wait for it.
    expect(Date.parse(sync.jobs[0].finished_at)).toBeGreaterThanOrEqual(Date.parse(syncChild.finished_at));
    expect(Date.parse(async.jobs[0].finished_at)).toBeLessThanOrEqual(Date.parse(asyncChild.jobs[0].finished_at));
    expect(childLog).toContain("stage prod from");
    // The child's jobs learn where they were triggered from (docs/compatibility.md#agent-api, BUILDKITE_TRIGGERED_FROM_BUILD_*).
    const env = await send(
      "GET",
      `${base}/pipelines/${target.slug}/builds/${syncChild.number}/jobs/${syncChild.jobs[0].id}/env`,
      org.secret,
    );
    expect(env.status).toBe(200);
    expect(env.body.env).toMatchObject({
      STAGE: "prod",
      BUILDKITE_SOURCE: "trigger_job",
      BUILDKITE_TRIGGERED_FROM_BUILD_ID: sync.id,
      BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: String(sync.number),
      BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: sync.pipeline.slug,
    });
  });

  it("refuses a trigger into another cluster without a rule, and creates the build once a rule allows it", async () => {
    const cross = await pipeline("Cross Cluster", [{ trigger: far.slug, label: "Far away", async: true }]);
    const refused = await finished(cross.slug, (await createBuild(cross.slug)).number);
    expect(refused.state).toBe("failed");
    expect(refused.jobs[0]).toMatchObject({ type: "trigger", state: "failed", exit_status: 1, triggered_build: null });
    expect(await logText(cross.slug, refused.number, refused.jobs[0].id)).toContain(
      `"${far.slug}" is in another cluster: a pipeline.trigger_build.pipeline rule from "${cross.slug}" to "${far.slug}" must allow this trigger`,
    );
    expect((await send("GET", `${base}/pipelines/${far.slug}/builds`, org.secret)).body).toEqual([]);

    const rule = await send("POST", `${base}/rules`, org.secret, {
      type: "pipeline.trigger_build.pipeline",
      value: { source_pipeline: cross.slug, target_pipeline: far.slug },
    });
    expect(rule.status).toBe(201);
    const allowed = await finished(cross.slug, (await createBuild(cross.slug)).number);
    expect(allowed.state).toBe("passed");
    const child = allowed.jobs[0].triggered_build;
    expect(child).toMatchObject({ number: 1 });
    const farBuild = await getBuild(far.slug, child.number);
    expect(farBuild).toMatchObject({
      id: child.id,
      state: "scheduled",
      triggered_from: { build_id: allowed.id, build_number: allowed.number, build_pipeline_slug: cross.slug },
    });
    expect(farBuild.jobs[0].cluster_id).toBe(crossClusterId);
    // No agent runs in that cluster: the child build is canceled so that nothing is left waiting.
    const canceled = await send("PUT", `${base}/pipelines/${far.slug}/builds/${child.number}/cancel`, org.secret);
    expect(canceled.body.state).toBe("canceled");
  });

  it("fails the job of an agent killed mid-job with exit -1, and retries it on another agent", async () => {
    const { build, doomed, rescuer } = await scenarios.lost;
    expect(await doomed.exited).toBeNull();
    expect(build.state).toBe("passed");
    const [lost, retry] = build.jobs;
    expect(lost).toMatchObject({
      state: "failed",
      exit_status: -1,
      signal_reason: "agent_lost",
      retried: true,
      retried_in_job_id: retry.id,
      retry_type: "automatic",
      agent: { name: doomed.name },
    });
    expect(retry).toMatchObject({
      state: "passed",
      exit_status: 0,
      retries_count: 1,
      retry_source: { job_id: lost.id, retry_type: "automatic" },
      agent: { name: rescuer.name },
    });
    const { slug } = await scenarios.lost;
    expect(await logText(slug, build.number, retry.id)).toContain("attempt 1 done");
  });

  it("times out a step past its timeout_in_minutes: the agent stops it and it ends timed_out", async () => {
    const { build } = await scenarios.timeout;
    expect(build.state).toBe("failed");
    expect(build.jobs).toHaveLength(1);
    const [job] = build.jobs;
    expect(job).toMatchObject({ label: "slow", state: "timed_out", retried: false });
    const ran = Date.parse(job.finished_at) - Date.parse(job.started_at);
    expect(ran).toBeGreaterThanOrEqual(60_000);
    expect(ran).toBeLessThan(120_000);
  });

  it("decodes every build with go-buildkite, and retries a failed job by hand with it", async () => {
    const [deploy, flaky, lost, triggers, badUpload, timeout] = await Promise.all([
      scenarios.deploy,
      scenarios.flaky,
      scenarios.lost,
      scenarios.triggers,
      scenarios.badUpload,
      scenarios.timeout,
    ]);
    const refs = {
      deploy: `${deploy.slug}/${deploy.build.number}`,
      flaky: `${flaky.slug}/${flaky.build.number}`,
      lost: `${lost.slug}/${lost.build.number}`,
      sync: `${triggers.sync.pipeline.slug}/${triggers.sync.number}`,
      child: `${triggers.target.slug}/${triggers.syncChild.number}`,
      timeout: `${timeout.slug}/${timeout.build.number}`,
    };
    const badJob = badUpload.build.jobs[0];
    const out = JSON.parse(
      execFileSync(checkBinary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CHECK_BUILDS: Object.values(refs).join(","),
          CHECK_ENV_JOB: `${refs.deploy}/${byLabel(deploy.build, "deploy")[0].id}`,
          CHECK_RETRY_JOB: `${badUpload.slug}/${badUpload.build.number}/${badJob.id}`,
        },
        encoding: "utf8",
      }),
    );
    const flakyJobs = out.builds[refs.flaky].jobs;
    expect(flakyJobs.map((j: Json) => [j.state, j.exit_status, j.retried, j.retries_count ?? 0])).toEqual([
      ["failed", 3, true, 0],
      ["failed", 3, true, 1],
      ["passed", 0, false, 2],
    ]);
    expect(flakyJobs[2].retry_source).toEqual({ job_id: flakyJobs[1].id, retry_type: "automatic" });
    expect(flakyJobs[0]).toMatchObject({ retried_in_job_id: flakyJobs[1].id, retry_type: "automatic" });
    expect(out.default_job_counts[refs.flaky]).toBe(1);

    const lostJobs = out.builds[refs.lost].jobs;
    expect(lostJobs.map((j: Json) => [j.state, j.exit_status])).toEqual([
      ["failed", -1],
      ["passed", 0],
    ]);
    expect(lostJobs[1].retry_source).toEqual({ job_id: lostJobs[0].id, retry_type: "automatic" });
    expect(out.default_job_counts[refs.lost]).toBe(1);

    const gate = out.builds[refs.deploy].jobs.find((j: Json) => j.type === "manual");
    expect(gate).toMatchObject({
      state: "unblocked",
      unblockable: false,
      unblocked_by: { id: org.user.id, email: org.user.email },
    });
    expect(gate.unblocked_at).toEqual(expect.any(String));
    expect(out.builds[refs.deploy].meta_data).toMatchObject({ "release-name": "v1.2.3", region: "eu" });

    expect(out.builds[refs.sync].jobs[0].triggered_build).toMatchObject({
      id: triggers.syncChild.id,
      number: triggers.syncChild.number,
    });
    expect(out.builds[refs.child].triggered_from).toEqual({
      build_id: triggers.sync.id,
      build_number: triggers.sync.number,
      build_pipeline_slug: triggers.sync.pipeline.slug,
    });
    expect(out.builds[refs.timeout].jobs[0]).toMatchObject({ state: "timed_out" });

    expect(out.env).toMatchObject({ BUILDKITE_JOB_ID: byLabel(deploy.build, "deploy")[0].id, CI: "true" });

    // The manual retry: a new attempt of the failed upload step, which fails again the same way.
    expect(out.retried).toMatchObject({
      state: "scheduled",
      retried: false,
      retries_count: 1,
      retry_type: "manual",
      retry_source: { job_id: badJob.id, retry_type: "manual" },
    });
    const again = await eventually(
      "the manual retry to finish",
      async () => {
        const b = await getBuild(badUpload.slug, badUpload.build.number, "?include_retried_jobs=true");
        return b.finished_at && b.jobs.length === 2 ? b : undefined;
      },
      60_000,
    );
    expect(again.state).toBe("failed");
    expect(again.jobs[0]).toMatchObject({
      id: badJob.id,
      retried: true,
      retried_in_job_id: out.retried.id,
      retry_type: "manual",
      retried_by: { id: org.user.id },
    });
    expect(again.jobs[1]).toMatchObject({ id: out.retried.id, state: "failed", retries_count: 1 });
  });
});
