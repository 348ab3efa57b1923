import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Role } from "@conveyor/proto/identity";
import {
  type Pipeline,
  type PipelineScheduleAttributes,
  PipelineScheduleSchema,
  PipelineSchema,
} from "@conveyor/proto/pipelines";
import { invalidFields } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// The schedule routes in the gateway alone (docs/compatibility.md#pipeline-schedules): Buildkite's fields, a body's
// nulls handed on as the fields' empty values, the service's field errors as a 422, and the scopes.
const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const pipeline: Pipeline = create(PipelineSchema, {
  id: "33333333-0000-4000-8000-000000000001",
  organizationId: acme.id,
  slug: "app",
  name: "App",
  repository: "r",
  provider: { id: "git", webhookToken: "hook", settings: {} },
  visibility: "private",
  badgeToken: "b",
  createdAt: timestampFromDate(new Date("2026-02-03T04:05:06.789Z")),
});
const schedule = create(PipelineScheduleSchema, {
  id: "44444444-0000-4000-8000-000000000001",
  organizationId: acme.id,
  pipelineId: pipeline.id,
  label: "Nightly",
  cronline: "@daily",
  commit: "HEAD",
  branch: "main",
  env: { A: "1" },
  enabled: true,
  nextBuildAt: timestampFromDate(new Date("2026-03-02T00:00:00.000Z")),
  createdAt: timestampFromDate(new Date("2026-03-01T10:00:00.000Z")),
  createdBy: { id: ann.id, name: ann.name, email: ann.email },
});

let app: FastifyInstance;
let attributes: PipelineScheduleAttributes | undefined;

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        ["writer", makePrincipal(ann, ["read_pipelines", "write_pipelines"], [[acme, Role.ADMIN]])],
        ["reader", makePrincipal(ann, ["read_pipelines"], [[acme, Role.ADMIN]])],
      ]),
      revoked: [],
    },
    {
      pipelines: {
        getPipeline: () => ({ pipeline }),
        getPipelineSchedule: () => ({ schedule }),
        createPipelineSchedule(req) {
          attributes = req.attributes;
          if (req.attributes?.cronline === "bad") throw invalidFields([{ field: "cronline", code: "is bad" }]);
          return { schedule };
        },
      },
    },
  ));
});
afterAll(() => app.close());

const base = "/v2/organizations/acme/pipelines/app/schedules";
const call = (method: "GET" | "POST", url: string, token: string, payload?: unknown) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });

describe("the schedule routes", () => {
  it("render a schedule with Buildkite's fields and its pipeline", async () => {
    const res = await call("GET", `${base}/${schedule.id}`, "reader");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: schedule.id,
      graphql_id: Buffer.from(`PipelineSchedule---${schedule.id}`).toString("base64"),
      url: expect.stringMatching(new RegExp(`/v2/organizations/acme/pipelines/app/schedules/${schedule.id}$`)),
      label: "Nightly",
      cronline: "@daily",
      message: null,
      commit: "HEAD",
      branch: "main",
      env: { A: "1" },
      enabled: true,
      next_build_at: "2026-03-02T00:00:00.000Z",
      failed_message: null,
      failed_at: null,
      created_at: "2026-03-01T10:00:00.000Z",
      created_by: expect.objectContaining({ id: ann.id, name: ann.name }),
      pipeline: expect.objectContaining({ id: pipeline.id, slug: "app" }),
    });
  });

  it("hand a body's nulls on as empty values, and leave out what it does not name", async () => {
    const res = await call("POST", base, "writer", { label: "L", cronline: "@daily", commit: null, env: null });
    expect(res.statusCode).toBe(201);
    expect(attributes).toMatchObject({ label: "L", cronline: "@daily", commit: "", env: { values: {} } });
    expect(attributes?.branch).toBeUndefined();
    expect(attributes?.enabled).toBeUndefined();
  });

  it("answer the service's field errors as a 422 naming the field", async () => {
    const res = await call("POST", base, "writer", { label: "L", cronline: "bad" });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ message: "Validation Failed", errors: [{ field: "cronline", code: "is bad" }] });
  });

  it("need write_pipelines to create", async () => {
    const res = await call("POST", base, "reader", { label: "L", cronline: "@daily" });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ message: "Your access token doesn't have the write_pipelines scope" });
  });
});
