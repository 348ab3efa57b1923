import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type AnnotateBuildRequest,
  type Annotation,
  AnnotationSchema,
  type ListAnnotationsRequest,
  type RemoveAnnotationRequest,
} from "@conveyor/proto/annotations";
import { BuildSchema } from "@conveyor/proto/builds";
import { Role } from "@conveyor/proto/identity";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const web = create(PipelineSchema, {
  id: "33333333-0000-4000-8000-000000000001",
  organizationId: acme.id,
  slug: "web",
});
const JOB = "44444444-0000-4000-8000-000000000001";

const annotations: Annotation[] = ["deploy", "tests.unit", "lint"].map((context, i) =>
  create(AnnotationSchema, {
    id: `55555555-0000-4000-8000-00000000000${i}`,
    buildId: "b-1",
    scope: "build",
    context,
    style: ["success", "error", "default"][i],
    priority: 10 - i,
    bodyHtml: `<p>${context}</p>\n`,
    createdAt: timestampFromDate(new Date("2026-03-01T10:00:00.120Z")),
    updatedAt: timestampFromDate(new Date("2026-03-01T10:05:00.000Z")),
  }),
);

let app: FastifyInstance;
const requests: ListAnnotationsRequest[] = [];
const writes: Array<AnnotateBuildRequest | RemoveAnnotationRequest> = [];

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        ["reader", makePrincipal(ann, ["read_builds"], [[acme, Role.MEMBER]])],
        ["writer", makePrincipal(ann, ["write_builds"], [[acme, Role.MEMBER]])],
      ]),
      revoked: [],
    },
    {
      pipelines: {
        getPipeline(req) {
          if (req.pipeline !== "web") throw new ConnectError("No pipeline found", Code.NotFound);
          return { pipeline: web };
        },
      },
      builds: {
        getBuild(req) {
          if (req.number !== 1) throw new ConnectError("No build found", Code.NotFound);
          return { build: create(BuildSchema, { id: "b-1", number: 1, pipelineId: web.id }) };
        },
      },
      annotations: {
        annotateBuild(req) {
          writes.push(req);
          if (req.jobId !== "" && req.jobId !== JOB) throw new ConnectError("No job found", Code.NotFound);
          if (req.priority === 11) throw new ConnectError("Priority must be from 1 to 10", Code.InvalidArgument);
          const first = annotations[0] as Annotation;
          return {
            annotation: create(AnnotationSchema, { ...first, scope: req.scope, context: req.context || "default" }),
          };
        },
        removeAnnotation(req) {
          writes.push(req);
          if (req.annotationId !== annotations[0]?.id) throw new ConnectError("No annotation found", Code.NotFound);
          return {};
        },
        listAnnotations(req) {
          requests.push(req);
          if (req.number !== 1) throw new ConnectError("No build found", Code.NotFound);
          if (req.jobId !== "" && req.jobId !== JOB) throw new ConnectError("No job found", Code.NotFound);
          const all = req.jobId === "" ? annotations : [];
          const start = (req.page - 1) * req.perPage;
          return { annotations: all.slice(start, start + req.perPage), hasMore: start + req.perPage < all.length };
        },
      },
    },
  ));
});
afterAll(() => app.close());
beforeEach(() => {
  requests.length = 0;
  writes.length = 0;
});

const get = (url: string, secret = "reader") =>
  app.inject({ method: "GET", url, headers: { authorization: `Bearer ${secret}` } });
const BASE = "/v2/organizations/acme/pipelines/web/builds";

describe("GET …/builds/{number}/annotations", () => {
  it("lists a build's annotations as go-buildkite decodes them", async () => {
    const res = await get(`${BASE}/1/annotations`);
    expect(res.statusCode).toBe(200);
    expect(res.headers.link).toBeUndefined();
    expect(res.json()).toEqual([
      {
        id: "55555555-0000-4000-8000-000000000000",
        context: "deploy",
        style: "success",
        scope: "build",
        priority: 10,
        body_html: "<p>deploy</p>\n",
        created_at: "2026-03-01T10:00:00.120Z",
        updated_at: "2026-03-01T10:05:00.000Z",
      },
      expect.objectContaining({ context: "tests.unit", style: "error", priority: 9 }),
      expect.objectContaining({ context: "lint", style: "default", priority: 8 }),
    ]);
    expect(requests[0]).toMatchObject({ pipelineId: web.id, number: 1, jobId: "", page: 1, perPage: 30 });
  });

  it("pages with a Link header", async () => {
    const first = await get(`${BASE}/1/annotations?per_page=2`);
    expect(first.json().map((a: { context: string }) => a.context)).toEqual(["deploy", "tests.unit"]);
    expect(first.headers.link).toBe(
      `<http://api.test${BASE}/1/annotations?per_page=2&page=2>; rel="next", <http://api.test${BASE}/1/annotations?per_page=2&page=1>; rel="first"`,
    );
    const second = await get(`${BASE}/1/annotations?per_page=2&page=2`);
    expect(second.json().map((a: { context: string }) => a.context)).toEqual(["lint"]);
    expect(second.headers.link).toContain('rel="prev"');
    expect(second.headers.link).not.toContain('rel="next"');
    expect((await get(`${BASE}/1/annotations?page=0`)).statusCode).toBe(400);
  });

  it("lists one job's job-scoped annotations", async () => {
    const res = await get(`${BASE}/1/jobs/${JOB}/annotations`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([]);
    expect(requests[0]).toMatchObject({ jobId: JOB });
    expect((await get(`${BASE}/1/jobs/nope/annotations`)).json()).toEqual({ message: "No job found" });
  });

  it("answers 404 for an unknown build, pipeline or organization, and 403 without read_builds", async () => {
    expect((await get(`${BASE}/2/annotations`)).json()).toEqual({ message: "No build found" });
    expect((await get(`${BASE}/x/annotations`)).statusCode).toBe(404);
    expect((await get("/v2/organizations/acme/pipelines/api/builds/1/annotations")).json()).toEqual({
      message: "No pipeline found",
    });
    expect((await get("/v2/organizations/beta/pipelines/web/builds/1/annotations")).statusCode).toBe(404);
    const forbidden = await get(`${BASE}/1/annotations`, "writer");
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toEqual({ message: "Your access token doesn't have the read_builds scope" });
    expect(requests.filter((r) => r.number === 1 && r.jobId === "")).toEqual([]);
  });
});

describe("POST and DELETE …/annotations", () => {
  const send = (method: "POST" | "DELETE", url: string, payload?: unknown, secret = "writer") =>
    app.inject({ method, url, headers: { authorization: `Bearer ${secret}` }, ...(payload ? { payload } : {}) });

  it("creates a build's annotation (201) with every field go-buildkite sends, as a person", async () => {
    const body = { body: "**hi**", style: "info", context: "ctx", append: true, priority: 7 };
    const res = await send("POST", `${BASE}/1/annotations`, body);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ id: annotations[0]?.id, context: "ctx", scope: "build" });
    expect(writes[0]).toMatchObject({
      buildId: "b-1",
      jobId: "",
      byPerson: true,
      body: "**hi**",
      style: "info",
      context: "ctx",
      append: true,
      priority: 7,
      scope: "build",
    });
  });

  it("creates a job's job-scoped annotation, leaving out an absent priority", async () => {
    const res = await send("POST", `${BASE}/1/jobs/${JOB}/annotations`, { body: "x" });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ scope: "job", context: "default" });
    expect(writes[0]).toMatchObject({ jobId: JOB, scope: "job", byPerson: true, append: false });
    expect((writes[0] as AnnotateBuildRequest).priority).toBeUndefined();
  });

  it("refuses unknown fields, a missing body and bad values with a 422, calling nothing", async () => {
    const unknown = await send("POST", `${BASE}/1/annotations`, { body: "x", scope: "job" });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json()).toEqual({
      message: "Validation Failed",
      errors: [{ field: "scope", code: "is not taken" }],
    });
    expect((await send("POST", `${BASE}/1/annotations`, { style: "info" })).statusCode).toBe(422);
    expect((await send("POST", `${BASE}/1/annotations`, { body: "x", append: "yes" })).statusCode).toBe(422);
    expect(writes).toEqual([]);
    const bad = await send("POST", `${BASE}/1/annotations`, { body: "x", priority: 11 });
    expect([bad.statusCode, bad.json().message]).toEqual([422, "Priority must be from 1 to 10"]);
  });

  it("deletes by UUID (204), and answers 404 for another annotation, build or job", async () => {
    const id = annotations[0]?.id ?? "";
    expect((await send("DELETE", `${BASE}/1/annotations/${id}`)).statusCode).toBe(204);
    expect(writes[0]).toMatchObject({ buildId: "b-1", jobId: "", annotationId: id });
    expect((await send("DELETE", `${BASE}/1/jobs/${JOB}/annotations/${id}`)).statusCode).toBe(204);
    expect(writes[1]).toMatchObject({ jobId: JOB, annotationId: id });
    expect((await send("DELETE", `${BASE}/1/annotations/other`)).json()).toEqual({ message: "No annotation found" });
    expect((await send("DELETE", `${BASE}/2/annotations/${id}`)).json()).toEqual({ message: "No build found" });
  });

  it("needs write_builds", async () => {
    const res = await send("POST", `${BASE}/1/annotations`, { body: "x" }, "reader");
    expect([res.statusCode, res.json().message]).toEqual([
      403,
      "Your access token doesn't have the write_builds scope",
    ]);
    expect((await send("DELETE", `${BASE}/1/annotations/${annotations[0]?.id}`, undefined, "reader")).statusCode).toBe(
      403,
    );
    expect(writes).toEqual([]);
  });
});
