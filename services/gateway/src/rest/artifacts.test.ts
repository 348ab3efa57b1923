import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Artifact, ArtifactSchema } from "@conveyor/proto/artifacts";
import { BuildSchema } from "@conveyor/proto/builds";
import { Role } from "@conveyor/proto/identity";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import type { FastifyInstance } from "fastify";
import {
  buildTestApp,
  type FakeServices,
  type FakeWorld,
  makeOrg,
  makePrincipal,
  makeUser,
} from "../testing/test-app.js";

const acme = makeOrg("acme", "Acme");
const beta = makeOrg("beta", "Beta");
const ann = makeUser(1, "Ann");
const web = create(PipelineSchema, {
  id: "33333333-0000-4000-8000-000000000001",
  organizationId: acme.id,
  slug: "web",
});
const BUILD = "44444444-0000-4000-8000-000000000001";
const JOB = "44444444-0000-4000-8000-000000000a01";
const OTHER_JOB = "44444444-0000-4000-8000-000000000a02";
const build = create(BuildSchema, {
  id: BUILD,
  organizationId: acme.id,
  pipelineId: web.id,
  number: 7,
  jobs: [
    { id: JOB, buildId: BUILD, stepKey: "make" },
    { id: OTHER_JOB, buildId: BUILD, stepKey: "use" },
  ],
});
const at = (iso: string) => timestampFromDate(new Date(iso));

function artifact(id: string, path: string, state = "finished"): Artifact {
  return create(ArtifactSchema, {
    id,
    buildId: BUILD,
    jobId: JOB,
    state,
    path,
    mimeType: "text/plain",
    fileSize: 5n,
    sha1sum: "a".repeat(40),
    createdAt: at("2026-03-01T00:00:00.000Z"),
  });
}

const A1 = "77777777-0000-4000-8000-000000000001";
const A2 = "77777777-0000-4000-8000-000000000002";
const EXPIRED = "77777777-0000-4000-8000-000000000003";
const base = "/v2/organizations/acme/pipelines/web/builds/7";

function setup() {
  const calls = { deleted: [] as string[], urlBases: [] as string[], lists: [] as Array<Record<string, unknown>> };
  const stored = [artifact(A1, "dist/sub/ünï.txt"), artifact(A2, "top.bin"), artifact(EXPIRED, "old.log", "expired")];
  const services: FakeServices = {
    pipelines: {
      getPipeline(req) {
        if (req.organizationId === acme.id && req.pipeline === "web") return { pipeline: web };
        throw new ConnectError("No pipeline found", Code.NotFound);
      },
    },
    builds: {
      getBuild(req) {
        if (req.pipelineId === web.id && req.number === 7) return { build };
        throw new ConnectError("No build found", Code.NotFound);
      },
    },
    artifacts: {
      listArtifacts(req) {
        calls.lists.push({ buildId: req.buildId, jobId: req.jobId, page: req.page, perPage: req.perPage });
        const all = stored.filter((a) => a.buildId === req.buildId && (req.jobId === "" || a.jobId === req.jobId));
        const per = req.perPage || 30;
        return { artifacts: all.slice((req.page - 1) * per, req.page * per), totalCount: all.length };
      },
      getArtifact(req) {
        const a = stored.find((x) => x.id === req.id && x.jobId === req.jobId && x.buildId === req.buildId);
        if (!a) throw new ConnectError("No artifact found", Code.NotFound);
        return { artifact: a };
      },
      signArtifactDownload(req) {
        calls.urlBases.push(req.urlBase);
        const a = stored.find((x) => x.id === req.id && x.jobId === req.jobId);
        if (!a) throw new ConnectError("No artifact found", Code.NotFound);
        const url = a.state === "finished" ? `${req.urlBase}/b/${a.id}?X-Amz-Signature=sig` : "";
        return { artifact: a, url };
      },
      deleteArtifact(req) {
        const i = stored.findIndex((x) => x.id === req.id && x.jobId === req.jobId);
        if (i < 0) throw new ConnectError("No artifact found", Code.NotFound);
        calls.deleted.push(req.id);
        stored.splice(i, 1);
        return {};
      },
    },
  };
  const w: FakeWorld = {
    orgs: [acme, beta],
    users: [ann],
    tokens: new Map([
      ["all", makePrincipal(ann, ["read_artifacts", "write_artifacts"], [[acme, Role.ADMIN]])],
      ["read", makePrincipal(ann, ["read_artifacts"], [[acme, Role.ADMIN]])],
      ["beta", makePrincipal(ann, ["read_artifacts", "write_artifacts"], [[beta, Role.ADMIN]])],
    ]),
    revoked: [],
  };
  return { calls, services, w };
}

let app: FastifyInstance;
let calls: ReturnType<typeof setup>["calls"];
beforeEach(async () => {
  const s = setup();
  calls = s.calls;
  app = (await buildTestApp(s.w, s.services, { urlBase: "http://s3.public" })).app;
});
afterEach(() => app.close());

const get = (url: string, token = "all") =>
  app.inject({ method: "GET", url, headers: { authorization: `Bearer ${token}` } });

describe("artifact REST routes", () => {
  it("lists a build's artifacts with Buildkite's fields and a Link header", async () => {
    const res = await get(`${base}/artifacts?per_page=2`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const url = `http://api.test${base}/jobs/${JOB}/artifacts/${A1}`;
    expect(body[0]).toEqual({
      id: A1,
      job_id: JOB,
      url,
      download_url: `${url}/download`,
      state: "finished",
      path: "dist/sub/ünï.txt",
      dirname: "dist/sub",
      filename: "ünï.txt",
      mime_type: "text/plain",
      file_size: 5,
      sha1sum: "a".repeat(40),
      glob_path: null,
      original_path: null,
    });
    expect(body[1]).toMatchObject({ dirname: ".", filename: "top.bin" });
    expect(res.headers.link).toContain('rel="next"');
    expect(calls.lists[0]).toMatchObject({ buildId: BUILD, jobId: "" });
  });

  it("lists a job's artifacts, and 404s a job of no such build", async () => {
    expect((await get(`${base}/jobs/${JOB}/artifacts`)).json()).toHaveLength(3);
    expect(calls.lists[0]).toMatchObject({ jobId: JOB });
    expect((await get(`${base}/jobs/${OTHER_JOB}/artifacts`)).json()).toEqual([]);
    const missing = await get(`${base}/jobs/44444444-0000-4000-8000-00000000ffff/artifacts`);
    expect([missing.statusCode, missing.json()]).toEqual([404, { message: "No job found" }]);
  });

  it("gets one artifact; another organization's, build's or job's is 404", async () => {
    expect((await get(`${base}/jobs/${JOB}/artifacts/${A1}`)).json()).toMatchObject({ id: A1, file_size: 5 });
    expect((await get(`${base}/jobs/${OTHER_JOB}/artifacts/${A1}`)).statusCode).toBe(404);
    expect((await get(`/v2/organizations/acme/pipelines/web/builds/8/jobs/${JOB}/artifacts/${A1}`)).statusCode).toBe(
      404,
    );
    expect((await get(`${base}/jobs/${JOB}/artifacts/${A1}`, "beta")).json()).toEqual({
      message: "No organization found",
    });
  });

  it("downloads with a 302 to the signed URL, in Location and the body; expired is 410", async () => {
    const res = await get(`${base}/jobs/${JOB}/artifacts/${A1}/download`);
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`http://s3.public/b/${A1}?X-Amz-Signature=sig`);
    expect(res.json()).toEqual({ url: res.headers.location });
    expect(calls.urlBases).toEqual(["http://s3.public"]);
    const expired = await get(`${base}/jobs/${JOB}/artifacts/${EXPIRED}/download`);
    expect([expired.statusCode, expired.json()]).toEqual([410, { message: "Artifact has expired" }]);
  });

  it("deletes with write_artifacts, by header or by access_token in the query of this route only", async () => {
    const path = `${base}/jobs/${JOB}/artifacts/${A1}`;
    const readOnly = await app.inject({ method: "DELETE", url: path, headers: { authorization: "Bearer read" } });
    expect(readOnly.statusCode).toBe(403);
    expect((await app.inject({ method: "DELETE", url: path })).statusCode).toBe(401);
    const byQuery = await app.inject({ method: "DELETE", url: `${path}?access_token=all` });
    expect(byQuery.statusCode).toBe(204);
    expect(calls.deleted).toEqual([A1]);
    expect((await app.inject({ method: "DELETE", url: `${path}?access_token=all` })).statusCode).toBe(404);
    // Other routes do not take the query token.
    expect((await app.inject({ method: "GET", url: `${base}/artifacts?access_token=all` })).statusCode).toBe(401);
  });

  it("needs read_artifacts to read", async () => {
    const w = setup();
    w.w.tokens.set("builds", makePrincipal(ann, ["read_builds"], [[acme, Role.ADMIN]]));
    const other = (await buildTestApp(w.w, w.services)).app;
    const res = await other.inject({
      method: "GET",
      url: `${base}/artifacts`,
      headers: { authorization: "Bearer builds" },
    });
    expect([res.statusCode, res.json().message]).toEqual([
      403,
      "Your access token doesn't have the read_artifacts scope",
    ]);
    await other.close();
  });
});
