import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type AuthenticateAgentCredentialResponse, CredentialKind } from "@conveyor/proto/agents";
import {
  ArtifactSchema,
  type CreateArtifactBatchRequest,
  type SearchArtifactsRequest,
  type UpdateArtifactStatesRequest,
} from "@conveyor/proto/artifacts";
import { BuildSchema, JobSchema } from "@conveyor/proto/builds";
import type { CheckRuleRequest } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { buildTestApp, type FakeServices, makeOrg } from "../testing/test-app.js";

const acme = makeOrg("acme", "Acme");
const JOB = "44444444-0000-4000-8000-000000000001";
const RETRIED = "44444444-0000-4000-8000-000000000002";
const BUILD = "55555555-0000-4000-8000-000000000001";
const OTHER_BUILD = "55555555-0000-4000-8000-000000000002";
const FOREIGN_BUILD = "55555555-0000-4000-8000-000000000003";
const PIPELINE = "33333333-0000-4000-8000-000000000001";
const OTHER_PIPELINE = "33333333-0000-4000-8000-000000000002";
const AGENT = "66666666-0000-4000-8000-000000000001";

const jobToken: Omit<AuthenticateAgentCredentialResponse, "$typeName" | "$unknown"> = {
  kind: CredentialKind.JOB,
  organizationId: acme.id,
  clusterId: "c1",
  tokenId: "",
  agentId: AGENT,
  jobId: JOB,
  buildId: BUILD,
};

function setup(opts: { jobState?: string; ruleAllows?: boolean } = {}) {
  const calls = {
    batches: [] as CreateArtifactBatchRequest[],
    states: [] as UpdateArtifactStatesRequest[],
    searches: [] as SearchArtifactsRequest[],
    rules: [] as CheckRuleRequest[],
  };
  const job = create(JobSchema, {
    id: JOB,
    buildId: BUILD,
    buildNumber: 7,
    organizationId: acme.id,
    pipelineId: PIPELINE,
    state: opts.jobState ?? "running",
  });
  const where: Record<string, { organizationId: string; pipelineId: string; buildNumber: number }> = {
    [BUILD]: { organizationId: acme.id, pipelineId: PIPELINE, buildNumber: 7 },
    [OTHER_BUILD]: { organizationId: acme.id, pipelineId: OTHER_PIPELINE, buildNumber: 3 },
    [FOREIGN_BUILD]: { organizationId: "99999999-0000-4000-8000-000000000001", pipelineId: PIPELINE, buildNumber: 1 },
  };
  const services: FakeServices = {
    agents: {
      authenticateAgentCredential(req) {
        if (req.secret === "bkaj_job") return jobToken;
        throw new ConnectError("nope", Code.Unauthenticated);
      },
    },
    builds: {
      getJob: (req) => {
        if (req.jobId === JOB) return { job };
        throw new ConnectError("No job found", Code.NotFound);
      },
      getBuild: (req) => ({
        build: create(BuildSchema, {
          id: req.pipelineId === PIPELINE ? BUILD : OTHER_BUILD,
          jobs: [
            { id: JOB, stepKey: "make", label: "Make it" },
            { id: RETRIED, stepKey: "make", label: "Make it", retried: true },
          ],
        }),
      }),
    },
    rules: {
      checkRule(req) {
        calls.rules.push(req);
        return { allowed: opts.ruleAllows ?? false, ruleId: "" };
      },
    },
    artifacts: {
      createArtifactBatch(req) {
        calls.batches.push(req);
        if (req.artifacts.length > 2)
          throw new ConnectError("Artifact quota exceeded: at most 2", Code.PermissionDenied);
        return {
          artifacts: req.artifacts.map((a, i) => ({ id: `a${i}`, path: a.path })),
          uploads: req.artifacts.map((_, i) => ({
            artifactId: `a${i}`,
            url: "http://s3.test:9000/bucket",
            fields: { key: `k${i}`, policy: "p", "x-amz-signature": "s" },
            fileField: "file",
          })),
        };
      },
      updateArtifactStates(req) {
        calls.states.push(req);
        return { artifacts: [] };
      },
      locateBuild(req) {
        const found = where[req.buildId];
        if (!found) throw new ConnectError("No build found", Code.NotFound);
        return found;
      },
      searchArtifacts(req) {
        calls.searches.push(req);
        return {
          artifacts: [
            {
              artifact: create(ArtifactSchema, {
                id: "a1",
                jobId: JOB,
                path: "dist/ünï.txt",
                fileSize: 5n,
                sha1sum: "a".repeat(40),
                sha256sum: "b".repeat(64),
                state: "finished",
                mimeType: "text/plain",
                globPath: "dist/*",
                createdAt: { seconds: 1_770_000_000n, nanos: 0 },
              }),
              url: "http://s3.test/bucket/k?X-Amz-Signature=s",
            },
          ],
        };
      },
    },
  };
  return { calls, services };
}

async function appWith(opts: Parameters<typeof setup>[0] = {}) {
  const s = setup(opts);
  const { app } = await buildTestApp({ orgs: [acme], users: [], tokens: new Map(), revoked: [] }, s.services, {
    urlBase: "http://s3.public",
  });
  return { app, calls: s.calls };
}

const token = { authorization: "Token bkaj_job" };
const batch = (paths: string[]) => ({
  id: "88888888-0000-4000-8000-000000000001",
  upload_destination: "",
  multipart_supported: true,
  artifacts: paths.map((path) => ({
    path,
    absolute_path: `/build/${path}`,
    glob_path: "dist/**/*",
    file_size: 5,
    sha1sum: "a".repeat(40),
    sha256sum: "b".repeat(64),
    content_type: "text/plain",
    created_at: "2026-03-01T00:00:00Z",
  })),
});

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe("agent artifact routes", () => {
  // Found by the agent API fuzzer (test/fuzz-agent.e2e.test.ts): the document declared only an empty 200 for these
  // routes, while the batch is created with 201 and every route answers 4xx errors (401, 404, 422, …).
  it("document the statuses they answer and their bodies in the OpenAPI document", async () => {
    const t = await appWith();
    app = t.app;
    type Responses = Record<string, { content?: Record<string, { schema: { required?: string[] } }> }>;
    const doc = (await app.inject({ method: "GET", url: "/v2/openapi.json" })).json() as {
      paths: Record<string, Record<string, { responses: Responses }>>;
    };
    const responsesOf = (path: string, method: string) => doc.paths[path]?.[method]?.responses ?? {};
    const created = responsesOf("/v3/jobs/{id}/artifacts", "post");
    expect(Object.keys(created).sort()).toEqual(["201", "4XX", "5XX"]);
    expect(Object.keys(responsesOf("/v3/jobs/{id}/artifacts", "put")).sort()).toEqual(["200", "4XX", "5XX"]);
    expect(Object.keys(responsesOf("/v3/builds/{id}/artifacts/search", "get")).sort()).toEqual(["200", "4XX", "5XX"]);
    const res = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/artifacts`,
      headers: token,
      payload: batch(["dist/a.txt"]),
    });
    expect(res.statusCode).toBe(201);
    const required = created["201"]?.content?.["application/json"]?.schema.required ?? [];
    expect(required.sort()).toEqual(["artifact_ids", "id", "per_artifact_instructions", "upload_instructions"]);
    expect(Object.keys(res.json()).sort()).toEqual(required);
  });

  it("creates a batch (201) with one upload form per artifact, in order, and the URL base configured", async () => {
    const t = await appWith();
    app = t.app;
    const res = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/artifacts`,
      headers: token,
      payload: batch(["dist/a.txt", "dist/ünï.txt"]),
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.id).toBe("88888888-0000-4000-8000-000000000001");
    expect(body.artifact_ids).toEqual(["a0", "a1"]);
    expect(body.upload_instructions).toMatchObject({ action: { method: "POST", file_input: "file" } });
    expect(body.per_artifact_instructions.a1).toEqual({
      action: { url: "http://s3.test:9000/bucket", method: "POST", path: "/bucket", file_input: "file" },
      data: { key: "k1", policy: "p", "x-amz-signature": "s" },
    });
    expect(t.calls.batches[0]).toMatchObject({
      organizationId: acme.id,
      pipelineId: PIPELINE,
      buildId: BUILD,
      buildNumber: 7,
      jobId: JOB,
      urlBase: "http://s3.public",
    });
    expect(t.calls.batches[0]?.artifacts[1]).toMatchObject({
      path: "dist/ünï.txt",
      fileSize: 5n,
      contentType: "text/plain",
    });
  });

  it("answers the quota with 403 and its reason, refuses other storage and too many artifacts", async () => {
    const t = await appWith();
    app = t.app;
    const post = (payload: object) =>
      (app as FastifyInstance).inject({ method: "POST", url: `/v3/jobs/${JOB}/artifacts`, headers: token, payload });
    const quota = await post(batch(["a", "b", "c"]));
    expect([quota.statusCode, quota.json().message]).toEqual([403, "Artifact quota exceeded: at most 2"]);
    expect((await post({ ...batch(["a"]), upload_destination: "s3://bucket/x" })).statusCode).toBe(422);
    // The schema's bound, within the test app's 4 KiB body limit.
    const many = { id: "b", artifacts: Array.from({ length: 101 }, () => ({ path: "f", file_size: 5, sha1sum: "" })) };
    expect((await post(many)).statusCode).toBe(422);
    const other = await (app as FastifyInstance).inject({
      method: "POST",
      url: "/v3/jobs/44444444-0000-4000-8000-00000000ffff/artifacts",
      headers: token,
      payload: batch(["a"]),
    });
    expect(other.statusCode).toBe(404);
  });

  it("refuses a batch, and state updates, for a finished job", async () => {
    const t = await appWith({ jobState: "passed" });
    app = t.app;
    const res = await app.inject({
      method: "POST",
      url: `/v3/jobs/${JOB}/artifacts`,
      headers: token,
      payload: batch(["a"]),
    });
    const refusal = "The job is passed: artifacts can be uploaded only while it runs";
    expect([res.statusCode, res.json().message]).toEqual([422, refusal]);
    expect(t.calls.batches).toEqual([]);
    const states = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${JOB}/artifacts`,
      headers: token,
      payload: { artifacts: [{ id: "a0", state: "finished" }] },
    });
    expect([states.statusCode, states.json().message]).toEqual([422, refusal]);
    expect(t.calls.states).toEqual([]);
  });

  it("passes states on", async () => {
    const t = await appWith();
    app = t.app;
    const res = await app.inject({
      method: "PUT",
      url: `/v3/jobs/${JOB}/artifacts`,
      headers: token,
      payload: { artifacts: [{ id: "a0", state: "finished", multipart: false }] },
    });
    expect([res.statusCode, res.json()]).toEqual([200, {}]);
    expect(t.calls.states[0]?.updates.map((u) => [u.id, u.state])).toEqual([["a0", "finished"]]);
  });

  it("searches the job's build: agent JSON types, scope by step key or label, retried jobs left out", async () => {
    const t = await appWith();
    app = t.app;
    const res = await app.inject({
      method: "GET",
      url: `/v3/builds/${BUILD}/artifacts/search?query=dist%2F*&scope=make&state=finished`,
      headers: token,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([
      {
        id: "a1",
        job_id: JOB,
        path: "dist/ünï.txt",
        absolute_path: "",
        glob_path: "dist/*",
        file_size: 5,
        sha1sum: "a".repeat(40),
        sha256sum: "b".repeat(64),
        url: "http://s3.test/bucket/k?X-Amz-Signature=s",
        upload_destination: "",
        state: "finished",
        mime_type: "text/plain",
        dirname: "dist",
        filename: "ünï.txt",
        created_at: "2026-02-02T02:40:00.000Z",
      },
    ]);
    expect(t.calls.searches[0]).toMatchObject({
      buildId: BUILD,
      query: "dist/*",
      jobIds: [JOB, RETRIED],
      excludeJobIds: [RETRIED],
      urlBase: "http://s3.public",
    });
    await app.inject({
      method: "GET",
      url: `/v3/builds/${BUILD}/artifacts/search?query=*&scope=Make%20it&include_retried_jobs=true`,
      headers: token,
    });
    expect(t.calls.searches[1]).toMatchObject({ jobIds: [JOB, RETRIED], excludeJobIds: [] });
    const none = await app.inject({
      method: "GET",
      url: `/v3/builds/${BUILD}/artifacts/search?scope=nope`,
      headers: token,
    });
    expect(none.json()).toEqual([]);
    expect(t.calls.searches).toHaveLength(2);
  });

  it("searches another pipeline's build only when an artifacts_read rule allows it", async () => {
    const denied = await appWith({ ruleAllows: false });
    app = denied.app;
    const url = `/v3/builds/${OTHER_BUILD}/artifacts/search?query=*`;
    const refused = await app.inject({ method: "GET", url, headers: token });
    expect(refused.statusCode).toBe(403);
    expect(denied.calls.rules[0]).toMatchObject({
      organizationId: acme.id,
      type: "pipeline.artifacts_read.pipeline",
      sourceId: PIPELINE,
      targetId: OTHER_PIPELINE,
    });
    expect(
      (await app.inject({ method: "GET", url: `/v3/builds/${FOREIGN_BUILD}/artifacts/search`, headers: token }))
        .statusCode,
    ).toBe(404);
    expect(
      (
        await app.inject({
          method: "GET",
          url: "/v3/builds/55555555-0000-4000-8000-00000000ffff/artifacts/search",
          headers: token,
        })
      ).statusCode,
    ).toBe(404);
    await app.close();
    const allowed = await appWith({ ruleAllows: true });
    app = allowed.app;
    const res = await app.inject({ method: "GET", url, headers: token });
    expect(res.statusCode).toBe(200);
    expect(allowed.calls.searches[0]?.buildId).toBe(OTHER_BUILD);
  });
});
