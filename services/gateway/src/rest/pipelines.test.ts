import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Role } from "@conveyor/proto/identity";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";
import { MAX_NESTING } from "./pipeline-body.js";

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const existing: Pipeline = create(PipelineSchema, {
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

/** An object `depth` levels deep: `{a: {a: … "x"}}`. */
function nested(depth: number): Record<string, unknown> {
  let value: unknown = "x";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value as Record<string, unknown>;
}

let app: FastifyInstance;
let calls: number;

beforeAll(async () => {
  const principal = makePrincipal(ann, ["read_pipelines", "write_pipelines"], [[acme, Role.ADMIN]]);
  ({ app } = await buildTestApp(
    { orgs: [acme], users: [ann], tokens: new Map([["secret", principal]]), revoked: [] },
    {
      pipelines: {
        createPipeline() {
          calls += 1;
          return { pipeline: existing };
        },
        getPipeline() {
          return { pipeline: existing };
        },
        updatePipeline() {
          calls += 1;
          return { pipeline: existing };
        },
      },
    },
  ));
});
afterAll(() => app.close());
beforeEach(() => {
  calls = 0;
});

const send = (method: "POST" | "PATCH", url: string, payload: unknown) =>
  app.inject({ method, url, payload: payload as object, headers: { authorization: "Bearer secret" } });

// Found by the fuzz suite (test/fuzz.e2e.test.ts): env, provider_settings and steps travel as protobuf Structs, and
// an object nested ~50 levels or more exceeded protobuf's recursion limit in the gateway or the service: a 500.
describe("free-form pipeline objects nested too deep", () => {
  const base = { name: "App", repository: "r", cluster_id: "c", configuration: "steps: []" };

  it.each([
    ["env", nested(MAX_NESTING + 1)],
    ["provider_settings", nested(150)],
    ["steps", [nested(MAX_NESTING)]],
  ])("refuses %s on create with a 422 naming the field, without calling the service", async (field, value) => {
    const res = await send("POST", "/v2/organizations/acme/pipelines", { ...base, [field]: value });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({
      message: "Validation Failed",
      errors: [{ field, code: `nests deeper than ${MAX_NESTING} levels` }],
    });
    expect(calls).toBe(0);
  });

  it("refuses them on update too", async () => {
    const res = await send("PATCH", "/v2/organizations/acme/pipelines/app", { provider_settings: nested(99) });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([
      { field: "provider_settings", code: `nests deeper than ${MAX_NESTING} levels` },
    ]);
    expect(calls).toBe(0);
  });

  it("passes objects up to the limit on", async () => {
    const res = await send("POST", "/v2/organizations/acme/pipelines", {
      ...base,
      env: nested(MAX_NESTING),
      steps: [nested(MAX_NESTING - 1)],
    });
    expect(res.statusCode).toBe(201);
    expect(calls).toBe(1);
  });
});
