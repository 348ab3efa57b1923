import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Annotation, AnnotationSchema, type ListAnnotationsRequest } from "@conveyor/proto/annotations";
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
      annotations: {
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
