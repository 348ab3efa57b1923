import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { JobEventType } from "@conveyor/proto/builds";
import { Role } from "@conveyor/proto/identity";
import {
  api,
  arrangeCluster,
  arrangeMember,
  arrangeOrgUser,
  builds,
  identity,
  send,
  unique,
} from "./support/stack-env.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SCOPES = ["read_builds", "write_builds", "read_pipelines", "write_pipelines", "read_organizations"];

const SIMPLE = `steps:
  - label: ":hammer: Test"
    key: test
    command: make test
    agents:
      queue: default
`;

type Org = Awaited<ReturnType<typeof arrangeOrgUser>>;
// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

const sha = () => randomBytes(20).toString("hex");

/** A REST client bound to one organization and token. */
function restFor(org: Org, token = org.secret) {
  const slug = org.organization.slug;
  const pipelines = `/v2/organizations/${slug}/pipelines`;
  const buildsOf = (p: string) => `${pipelines}/${p}/builds`;
  return {
    slug,
    pipelines,
    buildsOf,
    async pipeline(clusterId: string, extra: Record<string, unknown> = {}, configuration = SIMPLE): Promise<Json> {
      const res = await send("POST", pipelines, token, {
        name: unique("Pipe"),
        repository: "git@github.com:acme/web.git",
        cluster_id: clusterId,
        configuration,
        ...extra,
      });
      expect(res.status).toBe(201);
      return res.body;
    },
    create(p: string, body: Record<string, unknown>, as = token) {
      return send("POST", buildsOf(p), as, body);
    },
    async build(p: string, body: Record<string, unknown> = {}, as = token): Promise<Json> {
      const res = await send("POST", buildsOf(p), as, { commit: sha(), branch: "main", ...body });
      if (res.status !== 201) throw new Error(`create build: ${res.status} ${res.text}`);
      return res.body;
    },
    async get(p: string, number: number | string, query = ""): Promise<Json> {
      const res = await api(`${buildsOf(p)}/${number}${query}`, token);
      expect(res.status).toBe(200);
      return res.body;
    },
    cancel: (p: string, number: number) => send("PUT", `${buildsOf(p)}/${number}/cancel`, token),
    rebuild: (p: string, number: number) => send("PUT", `${buildsOf(p)}/${number}/rebuild`, token),
  };
}

const AGENT = () => ({
  id: randomUUID(),
  name: unique("agent"),
  hostname: "build-host-1",
  ipAddress: "127.0.0.1",
  userAgent: "buildkite-agent/3.137.0.x (linux; amd64)",
  connectionState: "connected",
});

/** Moves a job as an agent would: assign, accept, start. */
async function runJob(jobId: string) {
  await builds.transitionJob({ jobId, event: JobEventType.ASSIGN, agent: AGENT() });
  await builds.transitionJob({ jobId, event: JobEventType.ACCEPT });
  return builds.transitionJob({ jobId, event: JobEventType.START });
}

async function finishJob(jobId: string, exitStatus: number) {
  return builds.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus });
}

let owner: Org;
let rest: ReturnType<typeof restFor>;
let clusterId: string;
let simple: Json;

beforeAll(async () => {
  owner = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  rest = restFor(owner);
  clusterId = await arrangeCluster(owner.organization.id);
  simple = await rest.pipeline(clusterId);
});

describe("creating and reading builds", () => {
  it("creates a build with every field of the documented JSON type, and gets it back", async () => {
    const commit = sha();
    const res = await rest.create(simple.slug, {
      commit,
      branch: "main",
      message: "First build",
      author: { name: "Ada", email: "ada@example.com" },
      env: { DEPLOY: "0" },
      meta_data: { release: "v1" },
      clean_checkout: true,
      pull_request_id: 42,
      pull_request_base_branch: "main",
      pull_request_repository: "git@github.com:fork/web.git",
    });
    expect(res.status).toBe(201);
    const b = res.body;
    expect(b.url.endsWith(`${rest.buildsOf(simple.slug)}/${b.number}`)).toBe(true);
    expect(b).toMatchObject({
      number: expect.any(Number),
      state: "scheduled",
      blocked: false,
      cancel_reason: null,
      message: "First build",
      commit,
      branch: "main",
      env: { DEPLOY: "0" },
      source: "api",
      author: { name: "Ada", email: "ada@example.com" },
      meta_data: { release: "v1" },
      pull_request: { id: "42", base: "main", repository: "git@github.com:fork/web.git" },
      rebuilt_from: null,
      started_at: null,
      finished_at: null,
      creator: {
        id: owner.user.id,
        name: owner.user.name,
        email: owner.user.email,
        avatar_url: null,
        graphql_id: expect.any(String),
      },
    });
    expect(b.id).toMatch(UUID);
    expect(typeof b.graphql_id).toBe("string");
    expect(b.web_url).toMatch(new RegExp(`/${rest.slug}/${simple.slug}/builds/${b.number}$`));
    for (const key of ["created_at", "scheduled_at"]) expect(b[key]).toMatch(ISO_MS);
    expect(b.creator.created_at).toMatch(ISO_MS);
    expect(b.pipeline).toMatchObject({
      id: simple.id,
      slug: simple.slug,
      url: simple.url,
      repository: simple.repository,
    });
    expect(b.pipeline.provider.settings).toEqual(expect.any(Object));
    expect(b.pipeline).not.toHaveProperty("steps");

    expect(b.jobs).toHaveLength(1);
    const [job] = b.jobs;
    expect(job).toMatchObject({
      type: "script",
      name: ":hammer: Test",
      step_key: "test",
      step: { id: expect.any(String), signature: null },
      agent_query_rules: ["queue=default"],
      state: "scheduled",
      build_url: b.url,
      web_url: `${b.web_url}#${job.id}`,
      log_url: `${b.url}/jobs/${job.id}/log`,
      raw_log_url: `${b.url}/jobs/${job.id}/log.txt`,
      command: "make test",
      soft_failed: false,
      exit_status: null,
      agent: null,
      started_at: null,
      finished_at: null,
      retried: false,
      retried_in_job_id: null,
      retry_type: null,
      parallel_group_index: null,
      parallel_group_total: null,
      matrix: null,
      priority: { number: 0 },
    });
    expect(job.id).toMatch(UUID);
    for (const key of ["created_at", "scheduled_at", "runnable_at"]) expect(job[key]).toMatch(ISO_MS);

    const got = await rest.get(simple.slug, b.number);
    const { pipeline: _p1, ...createdRest } = b;
    const { pipeline: _p2, ...gotRest } = got;
    expect(gotRest).toEqual(createdRest);
  });

  it("defaults the author to the requesting user and numbers builds per pipeline from 1", async () => {
    const p = await rest.pipeline(clusterId);
    const first = await rest.build(p.slug, { author: {} });
    expect(first.number).toBe(1);
    expect(first.author).toEqual({ name: owner.user.name, email: owner.user.email });
    expect((await rest.build(p.slug)).number).toBe(2);
  });

  it("gives 20 concurrent creates on one pipeline 20 distinct numbers", async () => {
    const p = await rest.pipeline(clusterId);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => rest.build(p.slug, { message: `c${i}` })));
    const numbers = results.map((b) => b.number);
    expect(new Set(numbers).size).toBe(20);
    for (const n of numbers) expect(n).toBeGreaterThanOrEqual(1);
    const listed = await api(`${rest.buildsOf(p.slug)}?per_page=100`, owner.secret);
    expect(listed.body.map((b: Json) => b.number).sort((a: number, c: number) => a - c)).toEqual(
      [...numbers].sort((a, c) => a - c),
    );
  });

  it("renders the JSON types of running and finished jobs, parallel jobs and priorities", async () => {
    const p = await rest.pipeline(
      clusterId,
      {},
      `steps:
  - label: Shard
    command: make shard
    parallelism: 2
    priority: 3
    artifact_paths: "out/**/*"
  - label: Solo
    command: make solo
`,
    );
    const b = await rest.build(p.slug);
    expect(b.jobs.map((j: Json) => [j.parallel_group_index, j.parallel_group_total])).toEqual([
      [0, 2],
      [1, 2],
      [null, null],
    ]);
    expect(b.jobs[0]).toMatchObject({ priority: { number: 3 }, artifact_paths: "out/**/*" });
    await runJob(b.jobs[0].id);
    await finishJob(b.jobs[0].id, 1);
    await runJob(b.jobs[1].id);

    const listed = (await api(rest.buildsOf(p.slug), owner.secret)).body[0];
    expect(listed.state).toBe("failing");
    const [failed, running, waiting] = listed.jobs;
    expect(failed).toMatchObject({ state: "failed", exit_status: 1 });
    expect(failed.started_at).toMatch(ISO_MS);
    expect(failed.finished_at).toMatch(ISO_MS);
    expect(running).toMatchObject({ state: "running", exit_status: null, finished_at: null });
    expect(Object.keys(running.agent).sort()).toEqual(["id", "name", "url"]);
    expect(running.agent.url).toMatch(new RegExp(`/v2/organizations/${rest.slug}/agents/${running.agent.id}$`));
    expect(waiting).toMatchObject({ state: "scheduled", agent: null });

    const single = await rest.get(p.slug, b.number);
    expect(single.started_at).toMatch(ISO_MS);
    expect(single.jobs[1].agent).toMatchObject({
      id: running.agent.id,
      name: running.agent.name,
      graphql_id: expect.any(String),
      web_url: expect.any(String),
      connection_state: "connected",
      hostname: "build-host-1",
      ip_address: "127.0.0.1",
      user_agent: expect.stringMatching(/^buildkite-agent\//),
      creator: null,
    });

    await finishJob(b.jobs[1].id, 0);
    await runJob(b.jobs[2].id);
    await finishJob(b.jobs[2].id, 0);
    const done = await rest.get(p.slug, b.number);
    expect(done.state).toBe("failed");
    expect(done.finished_at).toMatch(ISO_MS);
    expect(done.jobs.map((j: Json) => j.exit_status)).toEqual([1, 0, 0]);
  });

  it("answers 422 Validation Failed for missing or mistyped fields, and creates nothing", async () => {
    const p = await rest.pipeline(clusterId);
    const missing = await rest.create(p.slug, {});
    expect(missing.status).toBe(422);
    expect(missing.body.message).toBe("Validation Failed");
    expect(missing.body.errors.map((e: Json) => e.field).sort()).toEqual(["branch", "commit"]);
    for (const e of missing.body.errors) expect(typeof e.code).toBe("string");
    const mistyped = await rest.create(p.slug, { commit: 1, branch: "main", env: { A: 1 }, pull_request_id: "x" });
    expect(mistyped.status).toBe(422);
    expect(mistyped.body.errors.map((e: Json) => e.field).sort()).toEqual(["commit", "env.A", "pull_request_id"]);
    expect((await api(rest.buildsOf(p.slug), owner.secret)).body).toEqual([]);
  });

  it("answers 404 for unknown organizations, pipelines and builds, and 403 without write_builds", async () => {
    const b = await rest.build(simple.slug);
    expect((await api(`${rest.buildsOf(simple.slug)}/999999`, owner.secret)).body).toEqual({
      message: "No build found",
    });
    const nonInteger = await api(`${rest.buildsOf(simple.slug)}/abc`, owner.secret);
    expect([nonInteger.status, nonInteger.body]).toEqual([404, { message: "No build found" }]);
    const noPipeline = await api(`${rest.buildsOf("no-such-pipeline")}/1`, owner.secret);
    expect([noPipeline.status, noPipeline.body]).toEqual([404, { message: "No pipeline found" }]);
    const noOrg = await api(`/v2/organizations/no-such-org-${Date.now()}/builds`, owner.secret);
    expect([noOrg.status, noOrg.body]).toEqual([404, { message: "No organization found" }]);

    const reader = await arrangeMember(owner.organization.id, Role.MEMBER, ["read_builds"]);
    expect((await api(`${rest.buildsOf(simple.slug)}/${b.number}`, reader.secret)).status).toBe(200);
    for (const res of [
      await rest.create(simple.slug, { commit: sha(), branch: "main" }, reader.secret),
      await send("PUT", `${rest.buildsOf(simple.slug)}/${b.number}/cancel`, reader.secret),
      await send("PUT", `${rest.buildsOf(simple.slug)}/${b.number}/rebuild`, reader.secret),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: "Your access token doesn't have the write_builds scope" });
    }
    const nobody = await arrangeMember(owner.organization.id, Role.MEMBER, ["read_pipelines"]);
    expect((await api("/v2/builds", nobody.secret)).body).toEqual({
      message: "Your access token doesn't have the read_builds scope",
    });
  });
});

describe("pipeline rules at creation", () => {
  it("refuses branches outside the pipeline's branch filter unless told to ignore it", async () => {
    const p = await rest.pipeline(clusterId, { branch_configuration: "main release/*" });
    const refused = await rest.create(p.slug, { commit: sha(), branch: "dev" });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ message: expect.any(String) });
    expect(refused.body.message.length).toBeGreaterThan(0);
    expect((await rest.create(p.slug, { commit: sha(), branch: "release/1.0" })).status).toBe(201);
    expect((await rest.create(p.slug, { commit: sha(), branch: "main" })).status).toBe(201);
    const forced = await rest.create(p.slug, { commit: sha(), branch: "dev", ignore_pipeline_branch_filters: true });
    expect(forced.status).toBe(201);
    expect(forced.body.branch).toBe("dev");
  });

  it("refuses builds of an archived pipeline with 422 and a reason", async () => {
    const p = await rest.pipeline(clusterId);
    expect((await send("POST", `${rest.pipelines}/${p.slug}/archive`, owner.secret)).status).toBe(200);
    const refused = await rest.create(p.slug, { commit: sha(), branch: "main" });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ message: expect.stringMatching(/archived/i) });
    expect((await send("POST", `${rest.pipelines}/${p.slug}/unarchive`, owner.secret)).status).toBe(200);
    expect((await rest.create(p.slug, { commit: sha(), branch: "main" })).status).toBe(201);
  });

  it("shows a build waiting at a block step as blocked: true with the step's blocked state", async () => {
    const p = await rest.pipeline(
      clusterId,
      {},
      `steps:
  - block: "Deploy?"
  - label: Deploy
    command: make deploy
`,
    );
    const b = await rest.build(p.slug);
    expect(b).toMatchObject({ blocked: true, state: "passed" });
    expect(b.jobs[0]).toMatchObject({
      type: "manual",
      label: "Deploy?",
      state: "blocked",
      unblockable: true,
      unblock_url: `${b.url}/jobs/${b.jobs[0].id}/unblock`,
      unblocked_at: null,
    });
    expect(b.jobs[1]).toMatchObject({ type: "script", agent: null });

    const later = await rest.pipeline(
      clusterId,
      {},
      `steps:
  - command: make test
  - block: Ship
    blocked_state: running
  - command: make ship
`,
    );
    const b2 = await rest.build(later.slug);
    expect(b2).toMatchObject({ blocked: false, state: "scheduled" });
    await runJob(b2.jobs[0].id);
    await finishJob(b2.jobs[0].id, 0);
    expect(await rest.get(later.slug, b2.number)).toMatchObject({ blocked: true, state: "running" });
  });

  it("cancels a build waiting at a block step, whatever state the block shows (§B1: blocked → canceled)", async () => {
    const p = await rest.pipeline(clusterId, {}, 'steps:\n  - block: "Deploy?"\n  - command: make deploy\n');
    const b = await rest.build(p.slug);
    expect(b).toMatchObject({ blocked: true, state: "passed" });
    const canceled = await rest.cancel(p.slug, b.number);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id: b.id, number: b.number, state: "canceled", blocked: false });
    expect(canceled.body.jobs[0].state).toBe("canceled");
  });

  it("skips queued builds of a branch when a newer one is created (skip_queued_branch_builds)", async () => {
    const p = await rest.pipeline(clusterId, { skip_queued_branch_builds: true });
    const s1 = await rest.build(p.slug, { branch: "main" });
    const s2 = await rest.build(p.slug, { branch: "dev" });
    const s3 = await rest.build(p.slug, { branch: "main" });
    expect((await rest.get(p.slug, s1.number)).state).toBe("skipped");
    expect((await rest.get(p.slug, s1.number)).finished_at).toMatch(ISO_MS);
    expect((await rest.get(p.slug, s2.number)).state).toBe("scheduled");
    await runJob(s3.jobs[0].id);
    await rest.build(p.slug, { branch: "main" });
    // Started builds are not skipped.
    expect((await rest.get(p.slug, s3.number)).state).toBe("running");
    expect((await rest.get(p.slug, s2.number)).state).toBe("scheduled");

    const filtered = await rest.pipeline(clusterId, {
      skip_queued_branch_builds: true,
      skip_queued_branch_builds_filter: "release/*",
    });
    const dev1 = await rest.build(filtered.slug, { branch: "dev" });
    const rel1 = await rest.build(filtered.slug, { branch: "release/1" });
    await rest.build(filtered.slug, { branch: "dev" });
    await rest.build(filtered.slug, { branch: "release/1" });
    expect((await rest.get(filtered.slug, dev1.number)).state).toBe("scheduled");
    expect((await rest.get(filtered.slug, rel1.number)).state).toBe("skipped");
  });

  it("cancels running builds of a branch when a newer one is created (cancel_running_branch_builds)", async () => {
    const p = await rest.pipeline(clusterId, {
      cancel_running_branch_builds: true,
      cancel_running_branch_builds_filter: "main",
    });
    const c1 = await rest.build(p.slug, { branch: "main" });
    await runJob(c1.jobs[0].id);
    const c2 = await rest.build(p.slug, { branch: "dev" });
    await runJob(c2.jobs[0].id);
    const c3 = await rest.build(p.slug, { branch: "dev" });
    // dev is outside the filter: the running dev build goes on.
    expect((await rest.get(p.slug, c2.number)).state).toBe("running");
    const c4 = await rest.build(p.slug, { branch: "main" });
    const superseded = await rest.get(p.slug, c1.number);
    expect(superseded.state).toBe("canceling");
    expect(superseded.jobs[0].state).toBe("canceling");
    await builds.transitionJob({ jobId: c1.jobs[0].id, event: JobEventType.CANCELED });
    const after = await rest.get(p.slug, c1.number);
    expect(after.state).toBe("canceled");
    expect(after.finished_at).toMatch(ISO_MS);
    // Queued builds are left to the skip setting.
    await rest.build(p.slug, { branch: "main" });
    expect((await rest.get(p.slug, c4.number)).state).toBe("scheduled");
    expect((await rest.get(p.slug, c3.number)).state).toBe("scheduled");
  });
});

describe("cancel", () => {
  it("cancels a scheduled build at once", async () => {
    const b = await rest.build(simple.slug);
    const res = await rest.cancel(simple.slug, b.number);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ number: b.number, state: "canceled" });
    expect(res.body.finished_at).toMatch(ISO_MS);
    expect(res.body.jobs[0].state).toBe("canceled");
  });

  it.each([
    ["CANCELED", JobEventType.CANCELED],
    ["FINISH", JobEventType.FINISH],
  ])("takes a running build through canceling to canceled once the agent reports %s", async (_label, event) => {
    const b = await rest.build(simple.slug);
    await runJob(b.jobs[0].id);
    expect((await rest.get(simple.slug, b.number)).state).toBe("running");
    const res = await rest.cancel(simple.slug, b.number);
    expect(res.status).toBe(200);
    expect(res.body.state).toBe("canceling");
    expect(res.body.finished_at).toBeNull();
    expect(res.body.jobs[0].state).toBe("canceling");
    await builds.transitionJob({ jobId: b.jobs[0].id, event, exitStatus: -1 });
    const done = await rest.get(simple.slug, b.number);
    expect(done.state).toBe("canceled");
    expect(done.jobs[0].state).toBe("canceled");
    expect(done.finished_at).toMatch(ISO_MS);
  });

  it("cancels a failing build", async () => {
    const p = await rest.pipeline(clusterId, {}, "steps:\n  - command: a\n  - command: b\n");
    const b = await rest.build(p.slug);
    await runJob(b.jobs[0].id);
    await finishJob(b.jobs[0].id, 2);
    await runJob(b.jobs[1].id);
    expect((await rest.get(p.slug, b.number)).state).toBe("failing");
    const res = await rest.cancel(p.slug, b.number);
    expect([res.status, res.body.state]).toEqual([200, "canceling"]);
  });

  it("refuses to cancel finished builds with 422 and the reason", async () => {
    const passed = await rest.build(simple.slug);
    await runJob(passed.jobs[0].id);
    await finishJob(passed.jobs[0].id, 0);
    expect((await rest.get(simple.slug, passed.number)).state).toBe("passed");
    const res = await rest.cancel(simple.slug, passed.number);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ message: expect.stringMatching(/cancel/i) });

    const canceled = await rest.build(simple.slug);
    expect((await rest.cancel(simple.slug, canceled.number)).status).toBe(200);
    const again = await rest.cancel(simple.slug, canceled.number);
    expect(again.status).toBe(422);
    expect(again.body).toEqual({ message: expect.any(String) });
    expect((await rest.cancel(simple.slug, 999999)).status).toBe(404);
  });
});

describe("rebuild", () => {
  it("creates a new build with a new number from the original's commit, branch, message, env, meta-data", async () => {
    const original = await rest.build(simple.slug, {
      branch: "feature/rebuild",
      message: "Rebuild me",
      env: { A: "1", B: "two" },
      meta_data: { release: "v9", team: "web" },
      pull_request_id: 7,
      pull_request_base_branch: "main",
      pull_request_repository: "git@github.com:fork/web.git",
    });
    await runJob(original.jobs[0].id);
    await finishJob(original.jobs[0].id, 1);
    const res = await rest.rebuild(simple.slug, original.number);
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b.number).toBeGreaterThan(original.number);
    expect(b.id).not.toBe(original.id);
    expect(b).toMatchObject({
      state: "scheduled",
      commit: original.commit,
      branch: "feature/rebuild",
      message: "Rebuild me",
      env: { A: "1", B: "two" },
      meta_data: { release: "v9", team: "web" },
      pull_request: { id: "7", base: "main", repository: "git@github.com:fork/web.git" },
      rebuilt_from: { id: original.id, number: original.number, url: original.url },
    });
    expect(b.jobs[0]).toMatchObject({ state: "scheduled", exit_status: null });
    expect((await rest.get(simple.slug, b.number)).rebuilt_from).toEqual(b.rebuilt_from);
    expect((await rest.get(simple.slug, original.number)).rebuilt_from).toBeNull();
    expect((await rest.rebuild(simple.slug, 999999)).status).toBe(404);
  });
});

describe("lists and filters", () => {
  /** What the test did to each build, to count what every filter must return independently of the service. */
  interface Model {
    key: string;
    seq: number;
    pipeline: string;
    number: number;
    branch: string;
    commit: string;
    meta: Record<string, string>;
    creator: string;
    createdLate: boolean;
    state: string;
    finishedLate: boolean | null;
  }
  let org: Org;
  let r: ReturnType<typeof restFor>;
  let member: Awaited<ReturnType<typeof arrangeMember>>;
  let pa: Json;
  let pb: Json;
  const models: Model[] = [];
  const c1 = sha();
  const c2 = sha();
  let createdMark: string;
  let finishedMark: string;

  beforeAll(async () => {
    org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
    r = restFor(org);
    member = await arrangeMember(org.organization.id, Role.MEMBER, ["read_builds", "write_builds"]);
    const cluster = await arrangeCluster(org.organization.id);
    pa = await r.pipeline(cluster);
    pb = await r.pipeline(cluster);
    const plan: Array<[Json, string, string, Record<string, string>, "owner" | "member"]> = [
      [pa, "main", c1, { release: "v1", team: "web" }, "owner"],
      [pa, "dev", c2, { release: "v2" }, "owner"],
      [pb, "main", c1, { release: "v1" }, "owner"],
      [pb, "feature/x", c2, {}, "member"],
      [pa, "main", c2, { release: "v2", team: "web" }, "owner"],
      [pa, "feature/x", c1, { team: "web" }, "member"],
      [pb, "dev", c1, { release: "v1" }, "owner"],
      [pb, "main", c2, { release: "v2" }, "owner"],
    ];
    const created: Json[] = [];
    for (const [i, [p, branch, commit, meta, who]] of plan.entries()) {
      if (i === 4) {
        await sleep(25);
        createdMark = new Date().toISOString();
        await sleep(25);
      }
      const b = await r.build(
        p.slug,
        { branch, commit, meta_data: meta },
        who === "owner" ? org.secret : member.secret,
      );
      created.push(b);
      models.push({
        key: `${p.slug}#${b.number}`,
        seq: i,
        pipeline: p.slug,
        number: b.number,
        branch,
        commit,
        meta,
        creator: who === "owner" ? org.user.id : (member.user?.id ?? ""),
        createdLate: i >= 4,
        state: "scheduled",
        finishedLate: null,
      });
    }
    const job = (i: number) => created[i].jobs[0].id as string;
    const model = (i: number) => models[i] as Model;
    // Finished early: 0 passed, 5 passed, 7 canceled.
    for (const i of [0, 5]) {
      await runJob(job(i));
      await finishJob(job(i), 0);
      Object.assign(model(i), { state: "passed", finishedLate: false });
    }
    expect((await r.cancel(pb.slug, model(7).number)).status).toBe(200);
    Object.assign(model(7), { state: "canceled", finishedLate: false });
    await sleep(25);
    finishedMark = new Date().toISOString();
    await sleep(25);
    // Finished late: 1 failed, 3 canceled. Running: 2.
    await runJob(job(1));
    await finishJob(job(1), 3);
    Object.assign(model(1), { state: "failed", finishedLate: true });
    expect((await r.cancel(pb.slug, model(3).number)).status).toBe(200);
    Object.assign(model(3), { state: "canceled", finishedLate: true });
    await runJob(job(2));
    Object.assign(model(2), { state: "running" });
  }, 60_000);

  const FINISHED = ["passed", "failed", "blocked", "canceled"];
  const cases: Array<[string, () => string, (m: Model) => boolean]> = [
    ["no filter", () => "", () => true],
    ["branch", () => "branch=main", (m) => m.branch === "main"],
    ["branch[]", () => "branch[]=main&branch[]=dev", (m) => ["main", "dev"].includes(m.branch)],
    ["branch with a slash", () => "branch=feature%2Fx", (m) => m.branch === "feature/x"],
    ["commit", () => `commit=${c1}`, (m) => m.commit === c1],
    ["commit[]", () => `commit[]=${c1}&commit[]=${c2}`, () => true],
    ["a shortened commit", () => `commit=${c1.slice(0, 7)}`, () => false],
    ["created_from", () => `created_from=${createdMark}`, (m) => m.createdLate],
    ["created_to", () => `created_to=${createdMark}`, (m) => !m.createdLate],
    ["creator (member)", () => `creator=${member.user?.id}`, (m) => m.creator === member.user?.id],
    ["creator (owner)", () => `creator=${org.user.id}`, (m) => m.creator === org.user.id],
    ["finished_from", () => `finished_from=${finishedMark}`, (m) => m.finishedLate === true],
    ["meta_data", () => "meta_data[release]=v1", (m) => m.meta.release === "v1"],
    [
      "two meta_data pairs",
      () => "meta_data[release]=v1&meta_data[team]=web",
      (m) => m.meta.release === "v1" && m.meta.team === "web",
    ],
    ["state scheduled", () => "state=scheduled", (m) => m.state === "scheduled"],
    ["state running", () => "state=running", (m) => m.state === "running"],
    ["state canceled", () => "state=canceled", (m) => m.state === "canceled"],
    ["state[]", () => "state[]=passed&state[]=failed", (m) => ["passed", "failed"].includes(m.state)],
    ["state finished", () => "state=finished", (m) => FINISHED.includes(m.state)],
    ["branch and state", () => "branch=main&state=scheduled", (m) => m.branch === "main" && m.state === "scheduled"],
    [
      "commit and meta_data",
      () => `commit=${c2}&meta_data[release]=v2`,
      (m) => m.commit === c2 && m.meta.release === "v2",
    ],
    [
      "branches, created_from and states",
      () => `branch[]=main&branch[]=dev&created_from=${createdMark}&state[]=scheduled&state[]=canceled`,
      (m) => ["main", "dev"].includes(m.branch) && m.createdLate && ["scheduled", "canceled"].includes(m.state),
    ],
    [
      "creator and finished_from",
      () => `creator=${org.user.id}&finished_from=${finishedMark}`,
      (m) => m.creator === org.user.id && m.finishedLate === true,
    ],
    [
      "branch and meta_data",
      () => "branch=feature/x&meta_data[team]=web",
      (m) => m.branch === "feature/x" && m.meta.team === "web",
    ],
    [
      "created_to and state finished",
      () => `created_to=${createdMark}&state=finished`,
      (m) => !m.createdLate && FINISHED.includes(m.state),
    ],
  ];

  it.each(cases)("filters by %s on all three list routes, newest first", async (_label, query, keep) => {
    const expected = models
      .filter(keep)
      .sort((a, b) => b.seq - a.seq)
      .map((m) => m.key);
    const q = query();
    for (const [path, scope] of [
      ["/v2/builds", () => true],
      [`/v2/organizations/${r.slug}/builds`, () => true],
      [r.buildsOf(pa.slug), (m: Model) => m.pipeline === pa.slug],
    ] as const) {
      const res = await api(`${path}?per_page=100${q ? `&${q}` : ""}`, org.secret);
      expect(res.status).toBe(200);
      const keys = res.body.map((b: Json) => `${b.pipeline.slug}#${b.number}`);
      const want = expected.filter((k) => scope(models.find((m) => m.key === k) as Model));
      expect({ path, q, keys }).toEqual({ path, q, keys: want });
    }
  });

  it("pages with a Link header until the last page, with no build twice", async () => {
    const seen: string[] = [];
    let next: string | undefined = `/v2/organizations/${r.slug}/builds?per_page=3&branch[]=main&branch[]=dev`;
    let pages = 0;
    while (next) {
      const res = await api(next, org.secret);
      expect(res.status).toBe(200);
      pages += 1;
      seen.push(...res.body.map((b: Json) => `${b.pipeline.slug}#${b.number}`));
      const link = res.headers.get("link") ?? "";
      const match = /<([^>]+)>; rel="next"/.exec(link);
      if (match?.[1]) {
        expect(match[1]).toMatch(/^https?:\/\/.+[?&]page=\d+/);
        expect(link).toContain('rel="first"');
        expect(link).not.toContain('rel="last"');
        next = match[1].replace(/^https?:\/\/[^/]+/, "");
      } else next = undefined;
    }
    const expected = models
      .filter((m) => ["main", "dev"].includes(m.branch))
      .sort((a, b) => b.seq - a.seq)
      .map((m) => m.key);
    expect(pages).toBe(Math.ceil(expected.length / 3));
    expect(seen).toEqual(expected);
  });

  it("leaves out jobs and pipeline when asked", async () => {
    const res = await api(`/v2/organizations/${r.slug}/builds?exclude_jobs=true&exclude_pipeline=true`, org.secret);
    expect(res.body).toHaveLength(models.length);
    for (const b of res.body) {
      expect(b).not.toHaveProperty("jobs");
      expect(b.pipeline ?? null).toBeNull();
      expect(b.url).toMatch(new RegExp(`/v2/organizations/${r.slug}/pipelines/[^/]+/builds/\\d+$`));
    }
  });

  it("answers 400 for invalid filters", async () => {
    for (const [query, message] of [
      ["state=bogus", /^Invalid states: bogus\. Valid states are .*finished/],
      ["creator=someone", /creator/],
      ["created_from=yesterday", /created_from/],
      ["finished_from=2025-02-30", /finished_from/],
    ] as const) {
      const res = await api(`/v2/organizations/${r.slug}/builds?${query}`, org.secret);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(message);
    }
  });

  it("covers only the token's organizations under /v2/builds", async () => {
    const { organization: other } = await identity.createOrganization({ name: unique("Org") });
    await identity.addMember({ organization: other?.id ?? "", userId: org.user.id, role: Role.ADMIN });
    const everywhere = await identity.createAccessToken({ userId: org.user.id, scopes: SCOPES });
    const narrowed = await identity.createAccessToken({
      userId: org.user.id,
      scopes: SCOPES,
      organizations: [org.organization.id],
    });
    const o = restFor({ ...org, organization: other as typeof org.organization }, everywhere.secret);
    const p = await o.pipeline(await arrangeCluster(other?.id ?? ""));
    const b = await o.build(p.slug);
    expect(b.url).toContain(`/v2/organizations/${other?.slug}/pipelines/${p.slug}/builds/`);

    const all = await api("/v2/builds?per_page=100", everywhere.secret);
    expect(all.body.map((x: Json) => x.id)).toContain(b.id);
    expect(all.body.find((x: Json) => x.id === b.id).pipeline.slug).toBe(p.slug);
    expect(all.body).toHaveLength(models.length + 1);
    const narrow = await api("/v2/builds?per_page=100", narrowed.secret);
    expect(narrow.body.map((x: Json) => x.id)).not.toContain(b.id);
    expect(narrow.body).toHaveLength(models.length);
  });
});
