import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Build,
  BuildSchema,
  type GetJobEnvRequest,
  type Job,
  JobSchema,
  type RetryJobRequest,
  type UnblockJobRequest,
  type UpdateJobRequest,
} from "@conveyor/proto/builds";
import { OrganizationSchema, PipelineAccessLevel, Role } from "@conveyor/proto/identity";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { invalidFields } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import {
  buildTestApp,
  type FakeServices,
  type FakeWorld,
  makeOrg,
  makePrincipal,
  makeUser,
} from "../testing/test-app.js";

// The jobs routes (retry, unblock, env) over in-memory fakes: scopes, pipeline access, body validation, what the
// builds service is asked, and the rendered job with its retry, unblock, expiry and trigger fields.

const acme = makeOrg("acme", "Acme");
const teams = create(OrganizationSchema, { ...makeOrg("teams", "Teams"), teamsEnabled: true });
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const at = (iso: string) => timestampFromDate(new Date(iso));
const WRITE = ["read_builds", "write_builds", "read_job_env"];

function pipeline(org: typeof acme, slug: string, n: number): Pipeline {
  return create(PipelineSchema, {
    id: `33333333-0000-4000-8000-${String(n).padStart(12, "0")}`,
    organizationId: org.id,
    slug,
    name: slug,
    repository: "git@github.com:acme/web.git",
    createdAt: at("2026-01-01T00:00:00.000Z"),
  });
}
const web = pipeline(acme, "web", 1);
const readable = pipeline(teams, "readable", 2);
const hidden = pipeline(teams, "hidden", 3);

const FAILED = "44444444-0000-4000-8000-000000000001";
const PASSED = "44444444-0000-4000-8000-000000000002";
const BLOCK = "44444444-0000-4000-8000-000000000003";
const RELEASE_TEAM = "77777777-0000-4000-8000-000000000001";
const ATTEMPT = "44444444-0000-4000-8000-000000000004";
const TRIGGER = "44444444-0000-4000-8000-000000000005";
const EXPIRED = "44444444-0000-4000-8000-000000000006";
const BUILD_ID = "55555555-0000-4000-8000-000000000007";
const CHILD_ID = "55555555-0000-4000-8000-000000000099";
const API = "http://api.test/v2/organizations/acme/pipelines/web/builds/7";
const BASE = "/v2/organizations/acme/pipelines/web/builds/7/jobs";

const annSnapshot = { id: ann.id, name: ann.name, email: ann.email, createdAt: ann.createdAt };

function job(init: MessageInitShape<typeof JobSchema>): Job {
  return create(JobSchema, {
    buildId: BUILD_ID,
    buildNumber: 7,
    pipelineId: web.id,
    organizationId: acme.id,
    createdAt: at("2026-02-01T10:00:00.000Z"),
    ...init,
  });
}

/** The new attempt the fake retry answers: the manual retry of FAILED. */
const attempt = job({
  id: ATTEMPT,
  type: "script",
  name: "Flaky",
  label: "Flaky",
  stepKey: "flaky",
  stepId: "66666666-0000-4000-8000-000000000001",
  state: "scheduled",
  command: "./flaky.sh",
  agentQueryRules: ["queue=default"],
  retriesCount: 1,
  retrySource: { jobId: FAILED, retryType: "manual" },
  scheduledAt: at("2026-02-01T10:05:00.000Z"),
  runnableAt: at("2026-02-01T10:05:00.000Z"),
});

/** In-memory builds, pipelines and teams services recording what the routes asked. */
function fakes() {
  const calls = {
    retry: [] as RetryJobRequest[],
    unblock: [] as UnblockJobRequest[],
    env: [] as GetJobEnvRequest[],
    update: [] as UpdateJobRequest[],
  };
  const known = (number: number, jobId: string) => {
    if (number !== 7) throw new ConnectError("No build found", Code.NotFound);
    if (![FAILED, PASSED, BLOCK].includes(jobId)) throw new ConnectError("No job found", Code.NotFound);
  };
  const services: FakeServices = {
    pipelines: {
      getPipeline(req) {
        const found = [web, readable, hidden].find(
          (p) => p.organizationId === req.organizationId && p.slug === req.pipeline,
        );
        if (!found) throw new ConnectError("No pipeline found", Code.NotFound);
        return { pipeline: found };
      },
    },
    // Bob's team (release) may read `readable` (not build it) and nothing else.
    teams: {
      listUserTeams(req) {
        const bobs = req.userId === bob.id && req.organizationId === teams.id;
        return {
          teams: bobs ? [{ id: RELEASE_TEAM, organizationId: teams.id, slug: "release", name: "Release" }] : [],
        };
      },
      getPipelineAccess(req) {
        return {
          pipelines: req.pipelineIds.map((id) =>
            id === readable.id
              ? { pipelineId: id, level: PipelineAccessLevel.READ_ONLY, read: true, build: false, edit: false }
              : { pipelineId: id },
          ),
        };
      },
    },
    builds: {
      retryJob(req) {
        calls.retry.push(req);
        known(req.number, req.jobId);
        if (req.jobId === PASSED)
          throw new ConnectError("Only failed, timed out or canceled jobs can be retried", Code.FailedPrecondition);
        return { job: attempt };
      },
      unblockJob(req) {
        calls.unblock.push(req);
        known(req.number, req.jobId);
        if (req.jobId !== BLOCK)
          throw new ConnectError("Only block and input jobs can be unblocked", Code.FailedPrecondition);
        // The block step of this fake has no allowed_teams: only callers who may build unblock it.
        if (req.readOnly) throw new ConnectError("Only members of the step's allowed_teams", Code.PermissionDenied);
        if (calls.unblock.filter((c) => c.jobId === BLOCK && c.fields.release).length > 1)
          throw new ConnectError("This job has already been unblocked", Code.FailedPrecondition);
        if (req.fields.region?.values.includes("mars"))
          throw invalidFields([{ field: "fields.region", code: 'must be one of the field\'s options, got "mars"' }]);
        return {
          job: job({
            id: BLOCK,
            type: "manual",
            name: "Deploy?",
            label: "Deploy?",
            stepId: "66666666-0000-4000-8000-000000000002",
            state: "unblocked",
            unblockedAt: at("2026-02-01T10:06:00.000Z"),
            unblockedBy: req.user,
          }),
        };
      },
      updateJob(req) {
        calls.update.push(req);
        known(req.number, req.jobId);
        if (req.jobId === PASSED)
          throw new ConnectError(
            "Only command jobs no agent has taken yet can be reprioritized",
            Code.FailedPrecondition,
          );
        return { job: job({ ...attempt, priority: req.priority ?? 0 }) };
      },
      getJobEnv(req) {
        calls.env.push(req);
        known(req.number, req.jobId);
        return { env: { BUILDKITE_JOB_ID: req.jobId, CI: "true" } };
      },
      getBuild(req) {
        if (req.number !== 7) throw new ConnectError("No build found", Code.NotFound);
        return { build: lifecycleBuild(req.includeRetriedJobs) };
      },
    },
  };
  return { calls, services };
}

/** A build showing every new job field: a retried job and its attempt, an unblocked block, a trigger, an expiry. */
function lifecycleBuild(includeRetried: boolean): Build {
  const retried = job({
    id: FAILED,
    type: "script",
    name: "Flaky",
    label: "Flaky",
    stepKey: "flaky",
    stepId: "66666666-0000-4000-8000-000000000001",
    state: "failed",
    exitStatus: 3,
    command: "./flaky.sh",
    retried: true,
    retriedInJobId: ATTEMPT,
    retryType: "manual",
    retriedBy: annSnapshot,
    startedAt: at("2026-02-01T10:01:00.000Z"),
    finishedAt: at("2026-02-01T10:02:00.000Z"),
  });
  const jobs = [
    ...(includeRetried ? [retried] : []),
    attempt,
    job({
      id: BLOCK,
      type: "manual",
      label: "Deploy?",
      stepId: "s-block",
      state: "unblocked",
      unblockedAt: at("2026-02-01T10:06:00.000Z"),
      unblockedBy: annSnapshot,
    }),
    job({
      id: TRIGGER,
      type: "trigger",
      label: "Downstream",
      stepId: "s-trigger",
      state: "passed",
      triggerPipeline: "downstream",
      triggeredBuild: { id: CHILD_ID, number: 12, pipelineSlug: "downstream" },
    }),
    job({
      id: EXPIRED,
      type: "script",
      label: "Nobody",
      stepId: "s-expired",
      state: "expired",
      command: "true",
      finishedAt: at("2026-02-02T10:00:00.000Z"),
    }),
  ];
  return create(BuildSchema, {
    id: BUILD_ID,
    organizationId: acme.id,
    pipelineId: web.id,
    pipelineSlug: "web",
    number: 7,
    state: "failed",
    commit: "HEAD",
    branch: "main",
    createdAt: at("2026-02-01T10:00:00.000Z"),
    triggeredFrom: {
      buildId: "55555555-0000-4000-8000-000000000001",
      buildNumber: 3,
      pipelineId: "33333333-0000-4000-8000-000000000009",
      pipelineSlug: "upstream",
      jobId: "44444444-0000-4000-8000-000000000009",
    },
    jobs,
  });
}

function world(): FakeWorld {
  return {
    orgs: [acme, teams],
    users: [ann, bob],
    tokens: new Map([
      [
        "admin",
        makePrincipal(ann, WRITE, [
          [acme, Role.ADMIN],
          [teams, Role.ADMIN],
        ]),
      ],
      ["member", makePrincipal(bob, WRITE, [[teams, Role.MEMBER]])],
      ["reader", makePrincipal(bob, ["read_builds"], [[acme, Role.MEMBER]])],
    ]),
    revoked: [],
  };
}

let app: FastifyInstance;
let calls: ReturnType<typeof fakes>["calls"];
beforeEach(async () => {
  const f = fakes();
  calls = f.calls;
  ({ app } = await buildTestApp(world(), f.services));
});
afterEach(() => app.close());

const call = (method: "GET" | "PUT", url: string, token = "admin", body?: unknown) =>
  app.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });

describe("PUT …/jobs/{id}/retry", () => {
  it("asks for a retry as the requesting user and answers the new attempt with its retry_source", async () => {
    const res = await call("PUT", `${BASE}/${FAILED}/retry`);
    expect(res.statusCode).toBe(200);
    expect(calls.retry).toHaveLength(1);
    expect(calls.retry[0]).toMatchObject({
      pipelineId: web.id,
      number: 7,
      jobId: FAILED,
      user: { id: ann.id, name: "Ann", email: "ann@example.com" },
    });
    const jobUrl = `${API}/jobs/${ATTEMPT}`;
    expect(res.json()).toEqual({
      id: ATTEMPT,
      graphql_id: Buffer.from(`Job---${ATTEMPT}`).toString("base64"),
      type: "script",
      name: "Flaky",
      label: "Flaky",
      step_key: "flaky",
      step: { id: "66666666-0000-4000-8000-000000000001", signature: null },
      agent_query_rules: ["queue=default"],
      state: "scheduled",
      build_url: API,
      web_url: `http://web.test/acme/web/builds/7#${ATTEMPT}`,
      log_url: `${jobUrl}/log`,
      raw_log_url: `${jobUrl}/log.txt`,
      artifacts_url: `${jobUrl}/artifacts`,
      command: "./flaky.sh",
      soft_failed: false,
      exit_status: null,
      signal: null,
      signal_reason: null,
      artifact_paths: null,
      agent: null,
      created_at: "2026-02-01T10:00:00.000Z",
      scheduled_at: "2026-02-01T10:05:00.000Z",
      runnable_at: "2026-02-01T10:05:00.000Z",
      started_at: null,
      finished_at: null,
      retried: false,
      retried_in_job_id: null,
      retries_count: 1,
      retry_type: null,
      retry_source: { job_id: FAILED, retry_type: "manual" },
      retried_by: null,
      expired_at: null,
      parallel_group_index: null,
      parallel_group_total: null,
      matrix: null,
      priority: { number: 0 },
      cluster_id: null,
      cluster_url: null,
      cluster_queue_id: null,
      cluster_queue_url: null,
    });
  });

  it("answers 422 with the service's reason when the job may not be retried", async () => {
    const res = await call("PUT", `${BASE}/${PASSED}/retry`);
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ message: "Only failed, timed out or canceled jobs can be retried" });
  });

  it("ignores a body, as go-buildkite sends none and scripts send {}", async () => {
    const res = await call("PUT", `${BASE}/${FAILED}/retry`, "admin", {});
    expect(res.statusCode).toBe(200);
    expect(res.json().retry_source).toEqual({ job_id: FAILED, retry_type: "manual" });
  });
});

describe("PUT …/jobs/{id}/unblock", () => {
  it("passes a string as one value, a list as several, and leaves null fields out", async () => {
    const res = await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", {
      fields: { release: "v1.2.3", regions: ["eu", "us"], notes: null },
    });
    expect(res.statusCode).toBe(200);
    expect(calls.unblock).toHaveLength(1);
    const [req] = calls.unblock;
    expect(req).toMatchObject({ pipelineId: web.id, number: 7, jobId: BLOCK, user: { id: ann.id }, readOnly: false });
    expect(Object.fromEntries(Object.entries(req?.fields ?? {}).map(([k, v]) => [k, v.values]))).toEqual({
      release: ["v1.2.3"],
      regions: ["eu", "us"],
    });
  });

  it("renders the unblocked job with unblocked_by, unblocked_at, unblockable and unblock_url", async () => {
    const res = await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", { fields: { release: "v1" } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id: BLOCK,
      type: "manual",
      label: "Deploy?",
      state: "unblocked",
      unblocked_at: "2026-02-01T10:06:00.000Z",
      unblocked_by: {
        id: ann.id,
        graphql_id: Buffer.from(`User---${ann.id}`).toString("base64"),
        name: "Ann",
        email: "ann@example.com",
        avatar_url: null,
        created_at: "2026-01-01T00:00:00.000Z",
      },
      unblockable: false,
      unblock_url: `${API}/jobs/${BLOCK}/unblock`,
      retry_source: null,
    });
    expect(res.json()).not.toHaveProperty("triggered_build");
  });

  it.each([
    ["no body", undefined],
    ["an empty object", {}],
    ["null fields", { fields: null }],
    ["an unblocker only", { unblocker: "someone" }],
  ])("unblocks with no values for %s", async (_label, body) => {
    const res = await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", body);
    expect(res.statusCode).toBe(200);
    expect(calls.unblock[0]?.fields).toEqual({});
  });

  it.each([
    ["a number", { fields: { release: 5 } }, "fields.release"],
    ["a list of numbers", { fields: { regions: [1, 2] } }, "fields.regions.0"],
    ["an object", { fields: { release: { v: "1" } } }, "fields.release"],
    ["fields as a string", { fields: "release=v1" }, "fields"],
    ["too many values", { fields: { regions: Array.from({ length: 101 }, (_, i) => `r${i}`) } }, "fields.regions"],
  ])("answers 422 Validation Failed for %s, without asking the service", async (_label, body, field) => {
    const res = await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", body);
    expect(res.statusCode).toBe(422);
    expect(res.json().message).toBe("Validation Failed");
    expect(res.json().errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    expect(calls.unblock).toHaveLength(0);
  });

  it("passes the service's field errors through as 422 Validation Failed", async () => {
    const res = await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", { fields: { region: "mars" } });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      message: "Validation Failed",
      errors: [{ field: "fields.region", code: 'must be one of the field\'s options, got "mars"' }],
    });
  });

  it("answers 422 with the reason when the job was unblocked already or is no block", async () => {
    expect((await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", { fields: { release: "a" } })).statusCode).toBe(200);
    const again = await call("PUT", `${BASE}/${BLOCK}/unblock`, "admin", { fields: { release: "b" } });
    expect(again.statusCode).toBe(422);
    expect(again.json()).toEqual({ message: "This job has already been unblocked" });
    const script = await call("PUT", `${BASE}/${FAILED}/unblock`, "admin", {});
    expect(script.statusCode).toBe(422);
    expect(script.json()).toEqual({ message: "Only block and input jobs can be unblocked" });
  });
});

describe("GET …/jobs/{id}/env", () => {
  it("answers the job's environment as {env}", async () => {
    const res = await call("GET", `${BASE}/${FAILED}/env`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ env: { BUILDKITE_JOB_ID: FAILED, CI: "true" } });
    expect(calls.env[0]).toMatchObject({ pipelineId: web.id, number: 7, jobId: FAILED });
  });
});

describe("access to the jobs routes", () => {
  const routes: Array<["GET" | "PUT", string, string]> = [
    ["PUT", "retry", "write_builds"],
    ["PUT", "unblock", "write_builds"],
    ["GET", "env", "read_job_env"],
  ];
  const anyCall = () => calls.retry.length + calls.unblock.length + calls.env.length;

  it.each(routes)("answers 403 for %s …/%s without %s", async (method, route, scope) => {
    const res = await call(method, `${BASE}/${FAILED}/${route}`, "reader", method === "PUT" ? {} : undefined);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ message: `Your access token doesn't have the ${scope} scope` });
    expect(anyCall()).toBe(0);
  });

  it.each(routes)(
    "answers 404 for %s …/%s of an unknown pipeline, organization, build or job",
    async (method, route) => {
      const body = method === "PUT" ? {} : undefined;
      const cases: Array<[string, string]> = [
        [`/v2/organizations/acme/pipelines/nope/builds/7/jobs/${FAILED}/${route}`, "No pipeline found"],
        [`/v2/organizations/nope/pipelines/web/builds/7/jobs/${FAILED}/${route}`, "No organization found"],
        [`/v2/organizations/acme/pipelines/web/builds/8/jobs/${FAILED}/${route}`, "No build found"],
        [`/v2/organizations/acme/pipelines/web/builds/x/jobs/${FAILED}/${route}`, "No build found"],
        [`${BASE}/44444444-0000-4000-8000-00000000ffff/${route}`, "No job found"],
      ];
      for (const [url, message] of cases) {
        const res = await call(method, url, "admin", body);
        expect([url, res.statusCode, res.json()]).toEqual([url, 404, { message }]);
      }
      // The malformed number and the unknown pipeline and organization never reach the builds service.
      expect(anyCall()).toBe(2);
    },
  );

  it("refuses retry and unblock with 403 to a member whose team may only read, who may still read the env", async () => {
    const base = `/v2/organizations/teams/pipelines/readable/builds/7/jobs`;
    for (const route of [`${FAILED}/retry`, `${BLOCK}/unblock`]) {
      const res = await call("PUT", `${base}/${route}`, "member", {});
      expect([route, res.statusCode, res.json()]).toEqual([route, 403, { message: "Forbidden" }]);
    }
    // Retry stops at the gateway; unblock asks builds, which weighs the step's allowed_teams against the caller's.
    expect(calls.retry).toHaveLength(0);
    expect(calls.unblock).toHaveLength(1);
    expect(calls.unblock[0]).toMatchObject({ readOnly: true, callerTeams: [RELEASE_TEAM, "release"] });
    const env = await call("GET", `${base}/${FAILED}/env`, "member");

    expect(env.statusCode).toBe(200);
    expect(calls.env[0]).toMatchObject({ pipelineId: readable.id });
  });

  it("answers 404 No pipeline found to a member for a pipeline no team of theirs reads", async () => {
    const res = await call("PUT", `/v2/organizations/teams/pipelines/hidden/builds/7/jobs/${FAILED}/retry`, "member");
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ message: "No pipeline found" });
    expect(anyCall()).toBe(0);
  });
});

describe("the new job and build fields in a build", () => {
  const get = (query = "") => call("GET", `/v2/organizations/acme/pipelines/web/builds/7${query}`);

  it("asks for retried jobs only with include_retried_jobs=true, and renders them with retried_by", async () => {
    const hiddenRes = await get();
    expect(hiddenRes.statusCode).toBe(200);
    expect(hiddenRes.json().jobs.map((j: { id: string }) => j.id)).toEqual([ATTEMPT, BLOCK, TRIGGER, EXPIRED]);
    const shown = (await get("?include_retried_jobs=true")).json();
    expect(shown.jobs[0]).toMatchObject({
      id: FAILED,
      state: "failed",
      exit_status: 3,
      retried: true,
      retried_in_job_id: ATTEMPT,
      retry_type: "manual",
      retries_count: null,
      retry_source: null,
      retried_by: { id: ann.id, name: "Ann", email: "ann@example.com" },
    });
    expect(shown.jobs[1]).toMatchObject({
      id: ATTEMPT,
      retried: false,
      retries_count: 1,
      retry_source: { job_id: FAILED, retry_type: "manual" },
    });
  });

  it("renders triggered_build on trigger jobs, expired_at on expired jobs and triggered_from on the build", async () => {
    const body = (await get()).json();
    const byId = new Map(body.jobs.map((j: { id: string }) => [j.id, j]));
    expect(byId.get(TRIGGER)).toMatchObject({
      type: "trigger",
      state: "passed",
      triggered_build: {
        id: CHILD_ID,
        number: 12,
        url: "http://api.test/v2/organizations/acme/pipelines/downstream/builds/12",
        web_url: "http://web.test/acme/downstream/builds/12",
      },
    });
    expect(byId.get(EXPIRED)).toMatchObject({ state: "expired", expired_at: "2026-02-02T10:00:00.000Z" });
    expect(byId.get(BLOCK)).toMatchObject({ unblocked_by: { id: ann.id }, unblockable: false });
    expect(byId.get(ATTEMPT)).not.toHaveProperty("triggered_build");
    expect(body.triggered_from).toEqual({
      build_id: "55555555-0000-4000-8000-000000000001",
      build_number: 3,
      build_pipeline_slug: "upstream",
    });
  });
});

describe("PUT …/jobs/{id}/reprioritize", () => {
  it("asks the builds service for the priority of the job named within its build and answers the job", async () => {
    const res = await call("PUT", `${BASE}/${FAILED}/reprioritize`, "admin", { priority: 50 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: ATTEMPT, priority: { number: 50 } });
    expect(calls.update).toEqual([
      expect.objectContaining({ jobId: FAILED, pipelineId: web.id, number: 7, priority: 50 }),
    ]);
  });

  it("answers the builds service's refusal and unknown jobs and builds", async () => {
    const taken = await call("PUT", `${BASE}/${PASSED}/reprioritize`, "admin", { priority: 1 });
    expect([taken.statusCode, taken.json().message]).toEqual([
      422,
      "Only command jobs no agent has taken yet can be reprioritized",
    ]);
    const unknown = await call("PUT", `${BASE}/nope/reprioritize`, "admin", { priority: 1 });
    expect([unknown.statusCode, unknown.json().message]).toEqual([404, "No job found"]);
  });

  it("refuses a missing, fractional, out-of-bounds priority and unknown fields with a 422, asking nothing", async () => {
    for (const body of [
      {},
      { priority: 1.5 },
      { priority: "1" },
      { priority: 1_000_001 },
      { priority: 1, note: "x" },
    ]) {
      const res = await call("PUT", `${BASE}/${FAILED}/reprioritize`, "admin", body);
      expect([JSON.stringify(body), res.statusCode]).toEqual([JSON.stringify(body), 422]);
    }
    const named = await call("PUT", `${BASE}/${FAILED}/reprioritize`, "admin", { priority: 1, note: "x" });
    expect(named.json()).toEqual({ message: "Validation Failed", errors: [{ field: "note", code: "is not taken" }] });
    expect(calls.update).toEqual([]);
  });

  it("needs write_builds and build access to the pipeline", async () => {
    const scope = await call("PUT", `${BASE}/${FAILED}/reprioritize`, "reader", { priority: 1 });
    expect(scope.statusCode).toBe(403);
    const readOnly = await call(
      "PUT",
      `/v2/organizations/teams/pipelines/readable/builds/7/jobs/${FAILED}/reprioritize`,
      "member",
      { priority: 1 },
    );
    expect(readOnly.statusCode).toBe(403);
    expect(calls.update).toEqual([]);
  });
});
