import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Build,
  BuildSchema,
  type CancelBuildRequest,
  type CreateBuildRequest,
  type GetBuildRequest,
  type ListBuildsRequest,
  type RebuildBuildRequest,
} from "@conveyor/proto/builds";
import { Role } from "@conveyor/proto/identity";
import { type BatchGetPipelinesRequest, type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
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

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const acme = makeOrg("acme", "Acme");
const beta = makeOrg("beta", "Beta");
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const READ = ["read_builds"];
const ALL = ["read_builds", "write_builds"];
const at = (iso: string) => timestampFromDate(new Date(iso));

function pipeline(org: typeof acme, slug: string, n: number): Pipeline {
  return create(PipelineSchema, {
    id: `33333333-0000-4000-8000-${String(n).padStart(12, "0")}`,
    organizationId: org.id,
    slug,
    name: slug,
    repository: "git@github.com:acme/web.git",
    provider: { id: "github", webhookToken: "hook", settings: { trigger_mode: "code" } },
    visibility: "private",
    badgeToken: `badge-${slug}`,
    createdAt: at("2026-01-01T00:00:00.000Z"),
  });
}

const web = pipeline(acme, "web", 1);
const api = pipeline(acme, "api", 2);
const betaApp = pipeline(beta, "app", 3);
const PIPELINES = [web, api, betaApp];

let seq = 0;
function build(p: Pipeline, number: number, init: Partial<MessageInitShape<typeof BuildSchema>> = {}): Build {
  seq += 1;
  const id = `44444444-0000-4000-8000-${String(seq).padStart(12, "0")}`;
  return create(BuildSchema, {
    id,
    organizationId: p.organizationId,
    pipelineId: p.id,
    pipelineSlug: p.slug,
    number,
    state: "scheduled",
    message: `build ${number}`,
    commit: "a".repeat(40),
    branch: "main",
    env: { CI: "true" },
    source: "api",
    creator: { id: ann.id, name: ann.name, email: ann.email, createdAt: ann.createdAt },
    author: { name: "Ann", email: "ann@example.com" },
    createdAt: at("2026-02-01T10:00:00.123Z"),
    scheduledAt: at("2026-02-01T10:00:00.456Z"),
    metaData: { release: "v1" },
    jobs: [
      {
        id: `${id.slice(0, -3)}a01`,
        buildId: id,
        type: "script",
        name: ":hammer: Test",
        label: ":hammer: Test",
        stepKey: "test",
        stepId: "55555555-0000-4000-8000-000000000001",
        state: "scheduled",
        command: "make test",
        agentQueryRules: ["queue=default"],
        priority: 0,
        parallelGroupIndex: 0,
        parallelGroupTotal: 2,
        createdAt: at("2026-02-01T10:00:00.123Z"),
        scheduledAt: at("2026-02-01T10:00:00.456Z"),
        runnableAt: at("2026-02-01T10:00:00.456Z"),
      },
      {
        id: `${id.slice(0, -3)}a02`,
        buildId: id,
        type: "script",
        name: "Lint",
        label: "Lint",
        stepId: "55555555-0000-4000-8000-000000000002",
        state: "passed",
        command: "make lint",
        exitStatus: 0,
        priority: 5,
        artifactPaths: "coverage/**/*",
        clusterId: "66666666-0000-4000-8000-000000000001",
        clusterQueueId: "77777777-0000-4000-8000-000000000001",
        agent: {
          id: "88888888-0000-4000-8000-000000000001",
          name: "agent-1",
          hostname: "host-1",
          ipAddress: "10.0.0.1",
          userAgent: "buildkite-agent/3.137.0",
          connectionState: "connected",
          createdAt: at("2026-01-15T00:00:00.000Z"),
        },
        createdAt: at("2026-02-01T10:00:00.123Z"),
        startedAt: at("2026-02-01T10:01:00.000Z"),
        finishedAt: at("2026-02-01T10:02:00.000Z"),
      },
      { id: `${id.slice(0, -3)}a03`, buildId: id, type: "waiter", state: "waiting", stepId: "s3" },
      {
        id: `${id.slice(0, -3)}a04`,
        buildId: id,
        type: "manual",
        name: "Deploy?",
        label: "Deploy?",
        stepId: "s4",
        state: "blocked",
      },
    ],
    ...init,
  } as MessageInitShape<typeof BuildSchema>);
}

/** In-memory builds and pipelines services that record what the gateway asked. */
function fakes() {
  const builds: Build[] = [];
  const calls = {
    list: [] as ListBuildsRequest[],
    batch: [] as BatchGetPipelinesRequest[],
    get: [] as GetBuildRequest[],
    create: [] as CreateBuildRequest[],
    cancel: [] as CancelBuildRequest[],
    rebuild: [] as RebuildBuildRequest[],
  };
  const find = (pipelineId: string, number: number) => {
    const b = builds.find((x) => x.pipelineId === pipelineId && x.number === number);
    if (!b) throw new ConnectError("No build found", Code.NotFound);
    return b;
  };
  const services: FakeServices = {
    pipelines: {
      getPipeline(req) {
        const p = PIPELINES.find((x) => x.organizationId === req.organizationId && x.slug === req.pipeline);
        if (!p) throw new ConnectError("No pipeline found", Code.NotFound);
        return { pipeline: p };
      },
      batchGetPipelines(req) {
        calls.batch.push(req);
        return {
          pipelines: PIPELINES.filter((p) => req.ids.includes(p.id) && req.organizationIds.includes(p.organizationId)),
        };
      },
    },
    builds: {
      listBuilds(req) {
        calls.list.push(req);
        const perPage = req.perPage || 30;
        const page = req.page || 1;
        const matching = builds
          .filter((b) => req.organizationIds.includes(b.organizationId))
          .filter((b) => !req.pipelineId || b.pipelineId === req.pipelineId)
          .filter((b) => req.branches.length === 0 || req.branches.includes(b.branch))
          .sort(
            (a, b) => timestampDate(b.createdAt as never).getTime() - timestampDate(a.createdAt as never).getTime(),
          );
        const slice = matching
          .slice((page - 1) * perPage, page * perPage)
          .map((b) => (req.excludeJobs ? { ...b, jobs: [] } : b));
        return { builds: slice, hasMore: matching.length > page * perPage };
      },
      getBuild(req) {
        calls.get.push(req);
        return { build: find(req.pipelineId, req.number) };
      },
      createBuild(req) {
        calls.create.push(req);
        if (!req.commit) throw invalidFields([{ field: "commit", code: "can't be blank" }]);
        const p =
          req.pipeline ?? PIPELINES.find((x) => x.organizationId === req.organizationId && x.id === req.pipelineId);
        if (!p) throw new ConnectError("pipeline not found", Code.NotFound);
        if (p.archivedAt) {
          throw new ConnectError("Pipeline is archived", Code.FailedPrecondition);
        }
        const b = build(p, 100 + calls.create.length, {
          commit: req.commit,
          branch: req.branch,
          pullRequest: req.pullRequestId
            ? { id: req.pullRequestId, base: req.pullRequestBaseBranch, repository: req.pullRequestRepository }
            : undefined,
        });
        builds.push(b);
        return { build: b };
      },
      cancelBuild(req) {
        calls.cancel.push(req);
        const b = find(req.pipelineId, req.number);
        if (b.state !== "scheduled") {
          throw new ConnectError(`Build can't be canceled because it is ${b.state}`, Code.FailedPrecondition);
        }
        b.state = "canceled";
        return { build: b };
      },
      rebuildBuild(req) {
        calls.rebuild.push(req);
        const old = find(req.pipeline?.id ?? "", req.number);
        const b = build(req.pipeline as Pipeline, 200, { rebuiltFrom: { id: old.id, number: old.number } });
        builds.push(b);
        return { build: b };
      },
    },
  };
  return { builds, calls, services };
}

function world(): FakeWorld {
  return {
    orgs: [acme, beta],
    users: [ann, bob],
    tokens: new Map([
      [
        "all",
        makePrincipal(ann, ALL, [
          [acme, Role.ADMIN],
          [beta, Role.MEMBER],
        ]),
      ],
      ["acme-only", makePrincipal(ann, ALL, [[acme, Role.MEMBER]])],
      ["read", makePrincipal(bob, READ, [[acme, Role.MEMBER]])],
      ["none", makePrincipal(bob, ["read_organizations"], [[acme, Role.MEMBER]])],
    ]),
    revoked: [],
  };
}

describe("builds routes", () => {
  let app: FastifyInstance;
  let fake: ReturnType<typeof fakes>;
  beforeEach(async () => {
    fake = fakes();
    app = (await buildTestApp(world(), fake.services)).app;
  });
  afterEach(() => app.close());

  const call = (method: string, url: string, token = "all", body?: unknown) =>
    app.inject({
      method: method as "GET",
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const pipelineBuilds = "/v2/organizations/acme/pipelines/web/builds";

  describe("rendering", () => {
    it("renders a build with every field and the JSON types go-buildkite decodes", async () => {
      const b = build(web, 7, {
        pullRequest: { id: "42", base: "main", repository: "git@github.com:acme/web.git" },
        rebuiltFrom: { id: "44444444-0000-4000-8000-999999999999", number: 6 },
        state: "running",
        startedAt: at("2026-02-01T10:01:00.000Z"),
      });
      fake.builds.push(b);
      const res = await call("GET", `${pipelineBuilds}/7`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      const url = "http://api.test/v2/organizations/acme/pipelines/web/builds/7";
      expect(body).toEqual({
        id: b.id,
        graphql_id: Buffer.from(`Build---${b.id}`).toString("base64"),
        url,
        web_url: "http://web.test/acme/web/builds/7",
        number: 7,
        state: "running",
        cancel_reason: null,
        blocked: false,
        message: "build 7",
        commit: "a".repeat(40),
        branch: "main",
        env: { CI: "true" },
        source: "api",
        creator: {
          id: ann.id,
          graphql_id: Buffer.from(`User---${ann.id}`).toString("base64"),
          name: "Ann",
          email: "ann@example.com",
          avatar_url: null,
          created_at: "2026-01-01T00:00:00.000Z",
        },
        author: { name: "Ann", email: "ann@example.com" },
        created_at: "2026-02-01T10:00:00.123Z",
        scheduled_at: "2026-02-01T10:00:00.456Z",
        started_at: "2026-02-01T10:01:00.000Z",
        finished_at: null,
        meta_data: { release: "v1" },
        pull_request: { id: "42", base: "main", repository: "git@github.com:acme/web.git" },
        rebuilt_from: {
          id: "44444444-0000-4000-8000-999999999999",
          number: 6,
          url: "http://api.test/v2/organizations/acme/pipelines/web/builds/6",
        },
        triggered_from: null,
        pipeline: expect.objectContaining({
          id: web.id,
          slug: "web",
          url: "http://api.test/v2/organizations/acme/pipelines/web",
          builds_url: "http://api.test/v2/organizations/acme/pipelines/web/builds",
          provider: {
            id: "github",
            webhook_url: "http://api.test/webhooks/deliver/hook",
            settings: { trigger_mode: "code" },
          },
          scheduled_builds_count: 0,
        }),
        jobs: expect.any(Array),
      });
      expect(body.pipeline).not.toHaveProperty("configuration");
      expect(body.pipeline).not.toHaveProperty("steps");

      const [script, finished, waiter, manual] = body.jobs;
      const jobUrl = `${url}/jobs/${b.jobs[0]?.id}`;
      expect(script).toEqual({
        id: b.jobs[0]?.id,
        graphql_id: Buffer.from(`Job---${b.jobs[0]?.id}`).toString("base64"),
        type: "script",
        name: ":hammer: Test",
        label: ":hammer: Test",
        step_key: "test",
        step: { id: "55555555-0000-4000-8000-000000000001", signature: null },
        agent_query_rules: ["queue=default"],
        state: "scheduled",
        build_url: url,
        web_url: `http://web.test/acme/web/builds/7#${b.jobs[0]?.id}`,
        log_url: `${jobUrl}/log`,
        raw_log_url: `${jobUrl}/log.txt`,
        artifacts_url: `${jobUrl}/artifacts`,
        command: "make test",
        soft_failed: false,
        exit_status: null,
        signal: null,
        signal_reason: null,
        artifact_paths: null,
        agent: null,
        created_at: "2026-02-01T10:00:00.123Z",
        scheduled_at: "2026-02-01T10:00:00.456Z",
        runnable_at: "2026-02-01T10:00:00.456Z",
        started_at: null,
        finished_at: null,
        retried: false,
        retried_in_job_id: null,
        retries_count: null,
        retry_type: null,
        retry_source: null,
        retried_by: null,
        expired_at: null,
        parallel_group_index: 0,
        parallel_group_total: 2,
        matrix: null,
        priority: { number: 0 },
        cluster_id: null,
        cluster_url: null,
        cluster_queue_id: null,
        cluster_queue_url: null,
      });
      expect(finished).toMatchObject({
        exit_status: 0,
        priority: { number: 5 },
        artifact_paths: "coverage/**/*",
        parallel_group_index: null,
        step_key: null,
        cluster_id: "66666666-0000-4000-8000-000000000001",
        cluster_url: "http://api.test/v2/organizations/acme/clusters/66666666-0000-4000-8000-000000000001",
        cluster_queue_id: "77777777-0000-4000-8000-000000000001",
        cluster_queue_url:
          "http://api.test/v2/organizations/acme/clusters/66666666-0000-4000-8000-000000000001/queues/77777777-0000-4000-8000-000000000001",
        started_at: "2026-02-01T10:01:00.000Z",
        finished_at: "2026-02-01T10:02:00.000Z",
      });
      // A single-build response shows the whole agent.
      expect(finished.agent).toEqual({
        id: "88888888-0000-4000-8000-000000000001",
        graphql_id: Buffer.from("Agent---88888888-0000-4000-8000-000000000001").toString("base64"),
        url: "http://api.test/v2/organizations/acme/agents/88888888-0000-4000-8000-000000000001",
        web_url: "http://web.test/organizations/acme/agents/88888888-0000-4000-8000-000000000001",
        name: "agent-1",
        connection_state: "connected",
        hostname: "host-1",
        ip_address: "10.0.0.1",
        user_agent: "buildkite-agent/3.137.0",
        creator: null,
        created_at: "2026-01-15T00:00:00.000Z",
      });
      expect(waiter).toMatchObject({ type: "waiter", name: null, command: null, state: "waiting", agent: null });
      expect(waiter).not.toHaveProperty("unblockable");
      expect(manual).toMatchObject({
        type: "manual",
        label: "Deploy?",
        state: "blocked",
        unblockable: true,
        unblocked_at: null,
        unblocked_by: null,
        unblock_url: `${url}/jobs/${b.jobs[3]?.id}/unblock`,
      });
    });

    it("shows only id, url and name of a job's agent in lists, and null pull_request, rebuilt_from, author", async () => {
      fake.builds.push(build(web, 1, { author: undefined }));
      const res = await call("GET", pipelineBuilds);
      expect(res.statusCode).toBe(200);
      const [b] = res.json();
      expect(b.jobs[1].agent).toEqual({
        id: "88888888-0000-4000-8000-000000000001",
        url: "http://api.test/v2/organizations/acme/agents/88888888-0000-4000-8000-000000000001",
        name: "agent-1",
      });
      expect(b).toMatchObject({ pull_request: null, rebuilt_from: null, author: null });
      for (const key of ["created_at", "scheduled_at"]) expect(b[key]).toMatch(ISO_MS);
    });

    it("hides the webhook URL of the embedded pipeline from callers who may not edit it", async () => {
      fake.builds.push(build(web, 1));
      const res = await call("GET", pipelineBuilds, "read");
      expect(res.json()[0].pipeline.provider.webhook_url).toBe("");
    });
  });

  describe("lists", () => {
    beforeEach(() => {
      for (let n = 1; n <= 5; n++) {
        fake.builds.push(
          build(web, n, { createdAt: at(`2026-02-0${n}T00:00:00.000Z`), branch: n % 2 ? "main" : "dev" }),
        );
      }
      fake.builds.push(build(api, 1, { createdAt: at("2026-02-06T00:00:00.000Z") }));
      fake.builds.push(build(betaApp, 1, { createdAt: at("2026-02-07T00:00:00.000Z") }));
    });

    it("lists a pipeline's builds newest first, paged by has_more with one Link header", async () => {
      const first = await call("GET", `${pipelineBuilds}?per_page=2`);
      expect(first.statusCode).toBe(200);
      expect(first.json().map((b: { number: number }) => b.number)).toEqual([5, 4]);
      expect(first.headers.link).toBe(
        `<http://api.test${pipelineBuilds}?per_page=2&page=2>; rel="next", ` +
          `<http://api.test${pipelineBuilds}?per_page=2&page=1>; rel="first"`,
      );
      const last = await call("GET", `${pipelineBuilds}?per_page=2&page=3`);
      expect(last.json().map((b: { number: number }) => b.number)).toEqual([1]);
      expect(last.headers.link).toBe(
        `<http://api.test${pipelineBuilds}?per_page=2&page=2>; rel="prev", ` +
          `<http://api.test${pipelineBuilds}?per_page=2&page=1>; rel="first"`,
      );
      expect((await call("GET", pipelineBuilds)).headers.link).toBeUndefined();
      expect(fake.calls.list[0]).toMatchObject({ organizationIds: [acme.id], pipelineId: web.id, page: 1, perPage: 2 });
      // The pipeline is already known: no batch lookup.
      expect(fake.calls.batch).toHaveLength(0);
    });

    it("keeps the filters in the Link URLs", async () => {
      const res = await call("GET", `${pipelineBuilds}?branch=main&per_page=1&state%5B%5D=scheduled`);
      expect(res.headers.link).toContain(
        `<http://api.test${pipelineBuilds}?branch=main&per_page=1&state%5B%5D=scheduled&page=2>; rel="next"`,
      );
    });

    it("passes every filter to the service", async () => {
      const creator = "11111111-0000-4000-8000-000000000001";
      const res = await call(
        "GET",
        `${pipelineBuilds}?branch[]=main&branch[]=dev&commit=${"b".repeat(40)}&created_from=2026-02-01T00:00:00Z` +
          `&created_to=2026-02-04T00:00:00.500Z&finished_from=2026-02-02&creator=${creator}` +
          "&meta_data[release]=v1&meta_data%5Bteam%5D=web&state[]=passed&state[]=finished&include_retried_jobs=true",
      );
      expect(res.statusCode).toBe(200);
      const req = fake.calls.list[0] as ListBuildsRequest;
      expect(req).toMatchObject({
        branches: ["main", "dev"],
        commits: ["b".repeat(40)],
        creatorId: creator,
        metaData: { release: "v1", team: "web" },
        states: ["passed", "finished"],
        includeRetriedJobs: true,
        excludeJobs: false,
      });
      expect(timestampDate(req.createdFrom as never).toISOString()).toBe("2026-02-01T00:00:00.000Z");
      expect(timestampDate(req.createdTo as never).toISOString()).toBe("2026-02-04T00:00:00.500Z");
      expect(timestampDate(req.finishedFrom as never).toISOString()).toBe("2026-02-02T00:00:00.000Z");
    });

    it("lists an organization's builds with their pipelines from one batch lookup", async () => {
      const res = await call("GET", "/v2/organizations/acme/builds");
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.map((b: { pipeline: { slug: string }; number: number }) => `${b.pipeline.slug}#${b.number}`)).toEqual(
        ["api#1", "web#5", "web#4", "web#3", "web#2", "web#1"],
      );
      expect(body[0].url).toBe("http://api.test/v2/organizations/acme/pipelines/api/builds/1");
      expect(fake.calls.list[0]).toMatchObject({ organizationIds: [acme.id], pipelineId: "" });
      expect(fake.calls.batch).toHaveLength(1);
      expect(new Set(fake.calls.batch[0]?.ids)).toEqual(new Set([web.id, api.id]));
    });

    it("lists builds of every reachable organization under /v2/builds with each organization's slug", async () => {
      const res = await call("GET", "/v2/builds?per_page=3");
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.map((b: { url: string }) => b.url)).toEqual([
        "http://api.test/v2/organizations/beta/pipelines/app/builds/1",
        "http://api.test/v2/organizations/acme/pipelines/api/builds/1",
        "http://api.test/v2/organizations/acme/pipelines/web/builds/5",
      ]);
      expect(body[0].pipeline.url).toBe("http://api.test/v2/organizations/beta/pipelines/app");
      // Only admins of the pipeline's organization see its webhook URL.
      expect(body[0].pipeline.provider.webhook_url).toBe("");
      expect(body[1].pipeline.provider.webhook_url).not.toBe("");
      expect(new Set(fake.calls.list[0]?.organizationIds)).toEqual(new Set([acme.id, beta.id]));
      expect(fake.calls.batch).toHaveLength(1);
      expect(new Set(fake.calls.batch[0]?.organizationIds)).toEqual(new Set([acme.id, beta.id]));
      expect(res.headers.link).toContain('rel="next"');
    });

    it("covers only the token's organizations under /v2/builds", async () => {
      const res = await call("GET", "/v2/builds", "acme-only");
      expect(res.json().map((b: { pipeline: { slug: string } }) => b.pipeline.slug)).not.toContain("app");
      expect(fake.calls.list[0]?.organizationIds).toEqual([acme.id]);
    });

    it("leaves the pipeline out, without looking it up, for exclude_pipeline=true", async () => {
      const res = await call("GET", "/v2/builds?exclude_pipeline=true");
      expect(res.statusCode).toBe(200);
      for (const b of res.json()) expect(b).not.toHaveProperty("pipeline");
      expect(res.json()[0].url).toBe("http://api.test/v2/organizations/beta/pipelines/app/builds/1");
      expect(fake.calls.batch).toHaveLength(0);
      const one = await call("GET", `${pipelineBuilds}?exclude_pipeline=true`);
      expect(one.json()[0]).not.toHaveProperty("pipeline");
    });

    it("leaves out the builds of a pipeline that is gone (deleted) rather than answering pipeline null", async () => {
      const gone = { ...web, id: "deleted-pipeline-id", slug: "gone" } as Pipeline;
      fake.builds.push(build(gone, 99));
      const res = await call("GET", "/v2/organizations/acme/builds?per_page=100");
      expect(res.statusCode).toBe(200);
      expect(res.json().length).toBeGreaterThan(0);
      expect(res.json().filter((b: { number: number }) => b.number === 99)).toEqual([]);
      expect(res.json().filter((b: { pipeline: unknown }) => b.pipeline === null)).toEqual([]);
    });

    it("leaves jobs out for exclude_jobs=true and asks the service not to load them", async () => {
      const res = await call("GET", "/v2/organizations/acme/builds?exclude_jobs=true");
      for (const b of res.json()) expect(b).not.toHaveProperty("jobs");
      expect(fake.calls.list[0]?.excludeJobs).toBe(true);
    });

    it("answers an empty page without a batch lookup", async () => {
      const res = await call("GET", "/v2/organizations/acme/builds?branch=nowhere");
      expect(res.json()).toEqual([]);
      expect(fake.calls.batch).toHaveLength(0);
    });

    it.each([
      ["state=bogus", /^Invalid states: bogus\. Valid states are scheduled, running, .*, finished\.$/],
      ["state[]=passed&state[]=nope", /^Invalid states: nope\./],
      ["creator=ann", /^creator must be a user UUID/],
      ["created_from=yesterday", /^created_from must be an ISO 8601 time/],
      ["created_to=2026-02-30", /^created_to must be an ISO 8601 time/],
      ["finished_from=x", /^finished_from must be an ISO 8601 time/],
      ["exclude_jobs=maybe", /^exclude_jobs must be true or false/],
      ["page=0", /^page must be a positive integer/],
      ["per_page=x", /^per_page must be a positive integer/],
    ])("answers 400 for %s", async (query, message) => {
      for (const path of ["/v2/builds", "/v2/organizations/acme/builds", pipelineBuilds]) {
        const res = await call("GET", `${path}?${query}`);
        expect(res.statusCode).toBe(400);
        expect(res.json().message).toMatch(message);
      }
      expect(fake.calls.list).toHaveLength(0);
    });
  });

  describe("get", () => {
    beforeEach(() => {
      fake.builds.push(build(web, 3));
    });

    it("passes include_retried_jobs to the service", async () => {
      await call("GET", `${pipelineBuilds}/3?include_retried_jobs=true`);
      expect(fake.calls.get[0]).toMatchObject({ pipelineId: web.id, number: 3, includeRetriedJobs: true });
    });

    it.each([
      ["an unknown organization", "/v2/organizations/nope/pipelines/web/builds/3", "No organization found"],
      [
        "an organization the token cannot reach",
        "/v2/organizations/beta/pipelines/app/builds/1",
        "No organization found",
      ],
      ["an unknown pipeline", "/v2/organizations/acme/pipelines/nope/builds/3", "No pipeline found"],
      ["an unknown number", `${pipelineBuilds}/4`, "No build found"],
      ["a non-integer number", `${pipelineBuilds}/abc`, "No build found"],
      ["a fractional number", `${pipelineBuilds}/1.5`, "No build found"],
      ["a zero number", `${pipelineBuilds}/0`, "No build found"],
      ["a number beyond 32 bits", `${pipelineBuilds}/99999999999`, "No build found"],
    ])("answers 404 for %s", async (_label, url, message) => {
      const res = await call("GET", url, "acme-only");
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ message });
    });

    it("does not ask the service about a number that is no integer", async () => {
      await call("GET", `${pipelineBuilds}/abc`);
      expect(fake.calls.get).toHaveLength(0);
    });
  });

  describe("create", () => {
    it("creates a build from the body and the pipeline the gateway read, answering 201", async () => {
      const res = await call("POST", pipelineBuilds, "all", {
        commit: "HEAD",
        branch: "main",
        message: "Hello",
        env: { A: "1" },
        meta_data: { k: "v" },
        clean_checkout: true,
        ignore_pipeline_branch_filters: true,
        pull_request_id: 42,
        pull_request_base_branch: "main",
        pull_request_repository: "git@github.com:fork/web.git",
        pull_request_labels: ["bug", "ui"],
      });
      expect(res.statusCode).toBe(201);
      const body = res.json();
      expect(body.pull_request).toEqual({ id: "42", base: "main", repository: "git@github.com:fork/web.git" });
      expect(body.jobs[1].agent).toHaveProperty("hostname");
      const req = fake.calls.create[0] as CreateBuildRequest;
      // The pipeline by id, without its steps.
      expect(req.pipelineId).toBe(web.id);
      expect(req.organizationId).toBe(web.organizationId);
      expect(req.pipeline).toBeUndefined();
      expect(req).toMatchObject({
        organizationSlug: "acme",
        commit: "HEAD",
        branch: "main",
        message: "Hello",
        env: { A: "1" },
        metaData: { k: "v" },
        cleanCheckout: true,
        ignorePipelineBranchFilters: true,
        pullRequestId: "42",
        pullRequestBaseBranch: "main",
        pullRequestRepository: "git@github.com:fork/web.git",
        pullRequestLabels: ["bug", "ui"],
        source: "api",
        creator: { id: ann.id, name: "Ann", email: "ann@example.com" },
        author: { name: "Ann", email: "ann@example.com" },
      });
    });

    it("takes the author from the body, and the requesting user when it is empty (go-buildkite sends {})", async () => {
      await call("POST", pipelineBuilds, "all", { commit: "c", branch: "b", author: { name: "Zed", email: "z@x.io" } });
      await call("POST", pipelineBuilds, "all", { commit: "c", branch: "b", author: {} });
      expect(fake.calls.create[0]?.author).toMatchObject({ name: "Zed", email: "z@x.io" });
      expect(fake.calls.create[1]?.author).toMatchObject({ name: "Ann", email: "ann@example.com" });
      expect(fake.calls.create[1]?.pullRequestId).toBe("");
    });

    it("answers 422 Validation Failed naming each field of the wrong type", async () => {
      const res = await call("POST", pipelineBuilds, "all", {
        commit: 1,
        branch: "main",
        env: { A: 1 },
        pull_request_id: "x",
        clean_checkout: "yes",
      });
      expect(res.statusCode).toBe(422);
      const body = res.json();
      expect(body.message).toBe("Validation Failed");
      expect(body.errors.map((e: { field: string }) => e.field).sort()).toEqual([
        "clean_checkout",
        "commit",
        "env.A",
        "pull_request_id",
      ]);
      expect(fake.calls.create).toHaveLength(0);
    });

    it("passes the service's field errors through as 422 Validation Failed", async () => {
      const res = await call("POST", pipelineBuilds, "all", { branch: "main" });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual({
        message: "Validation Failed",
        errors: [{ field: "commit", code: "can't be blank" }],
      });
    });

    it("passes a refusal through as 422 with its reason", async () => {
      const p = PIPELINES[0] as Pipeline;
      const original = p.archivedAt;
      p.archivedAt = at("2026-01-05T00:00:00.000Z");
      try {
        const res = await call("POST", pipelineBuilds, "all", { commit: "c", branch: "b" });
        expect(res.statusCode).toBe(422);
        expect(res.json()).toEqual({ message: "Pipeline is archived" });
      } finally {
        p.archivedAt = original;
      }
    });

    it("answers 404 for an unknown pipeline without creating anything", async () => {
      const res = await call("POST", "/v2/organizations/acme/pipelines/nope/builds", "all", {
        commit: "c",
        branch: "b",
      });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ message: "No pipeline found" });
      expect(fake.calls.create).toHaveLength(0);
    });
  });

  describe("cancel and rebuild", () => {
    beforeEach(() => {
      fake.builds.push(build(web, 1), build(web, 2, { state: "passed" }));
    });

    it("cancels a build and answers 200 with it", async () => {
      const res = await call("PUT", `${pipelineBuilds}/1/cancel`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ number: 1, state: "canceled" });
      expect(fake.calls.cancel[0]).toMatchObject({ pipelineId: web.id, number: 1 });
    });

    it("answers 422 with the service's reason when the build cannot be canceled", async () => {
      const res = await call("PUT", `${pipelineBuilds}/2/cancel`);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual({ message: "Build can't be canceled because it is passed" });
    });

    it("answers 404 for an unknown or malformed build number", async () => {
      expect((await call("PUT", `${pipelineBuilds}/9/cancel`)).json()).toEqual({ message: "No build found" });
      expect((await call("PUT", `${pipelineBuilds}/x/rebuild`)).statusCode).toBe(404);
    });

    it("rebuilds a build, answering 200 with the new one and rebuilt_from", async () => {
      const res = await call("PUT", `${pipelineBuilds}/2/rebuild`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        number: 200,
        rebuilt_from: {
          id: fake.builds[1]?.id,
          number: 2,
          url: "http://api.test/v2/organizations/acme/pipelines/web/builds/2",
        },
      });
      expect(fake.calls.rebuild[0]).toMatchObject({ organizationSlug: "acme", number: 2, creator: { id: ann.id } });
      expect(fake.calls.rebuild[0]?.pipeline?.id).toBe(web.id);
    });
  });

  describe("scopes", () => {
    it.each([
      ["GET", "/v2/builds", "read_builds"],
      ["GET", "/v2/organizations/acme/builds", "read_builds"],
      ["GET", pipelineBuilds, "read_builds"],
      ["GET", `${pipelineBuilds}/1`, "read_builds"],
    ])("answers 403 for %s %s without %s", async (method, url, scope) => {
      const res = await call(method, url, "none");
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ message: `Your access token doesn't have the ${scope} scope` });
    });

    it.each([
      ["POST", pipelineBuilds],
      ["PUT", `${pipelineBuilds}/1/cancel`],
      ["PUT", `${pipelineBuilds}/1/rebuild`],
    ])("answers 403 for %s %s without write_builds", async (method, url) => {
      const res = await call(method, url, "read", method === "POST" ? { commit: "c", branch: "b" } : undefined);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ message: "Your access token doesn't have the write_builds scope" });
      expect(fake.calls.create.length + fake.calls.cancel.length + fake.calls.rebuild.length).toBe(0);
    });
  });
});
