import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Role } from "@conveyor/proto/identity";
import { type Pipeline, type PipelineAttributes, PipelineSchema } from "@conveyor/proto/pipelines";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";
import { MAX_NESTING } from "./pipeline-body.js";

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const existing: Pipeline = create(PipelineSchema, {
  id: "33333333-0000-4000-8000-000000000001",
  organizationId: acme.id,
  slug: "app",
  name: "App",
  repository: "r",
  provider: { id: "git", webhookToken: "hook", webhookSecret: "s3cret", settings: { build_tags: true } },
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
let updated: PipelineAttributes | undefined;

beforeAll(async () => {
  const principal = makePrincipal(ann, ["read_pipelines", "write_pipelines"], [[acme, Role.ADMIN]]);
  const reader = makePrincipal(bob, ["read_pipelines"], [[acme, Role.MEMBER]]);
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann, bob],
      tokens: new Map([
        ["secret", principal],
        ["reader", reader],
      ]),
      revoked: [],
    },
    {
      pipelines: {
        createPipeline() {
          calls += 1;
          return { pipeline: existing };
        },
        getPipeline() {
          return { pipeline: existing };
        },
        updatePipeline(req) {
          calls += 1;
          updated = req.attributes;
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

describe("the webhook secret", () => {
  it("is set through provider_settings.webhook_secret, apart from the settings, and removed by null", async () => {
    const res = await send("PATCH", "/v2/organizations/acme/pipelines/app", {
      provider_settings: { build_tags: true, webhook_secret: "new secret" },
    });
    expect(res.statusCode).toBe(200);
    expect(updated?.webhookSecret).toBe("new secret");
    expect(updated?.providerSettings).toEqual({ build_tags: true });
    await send("PATCH", "/v2/organizations/acme/pipelines/app", { provider_settings: { webhook_secret: null } });
    expect(updated?.webhookSecret).toBe("");
    await send("PATCH", "/v2/organizations/acme/pipelines/app", { provider_settings: { build_tags: false } });
    expect(updated?.webhookSecret).toBeUndefined();
  });

  it("must be a string", async () => {
    const res = await send("PATCH", "/v2/organizations/acme/pipelines/app", {
      provider_settings: { webhook_secret: 7 },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field: "provider_settings.webhook_secret", code: "must be a string" }]);
    expect(calls).toBe(0);
  });

  it("is shown only to those who may edit the pipeline, beside the webhook URL", async () => {
    const editor = await app.inject({
      method: "GET",
      url: "/v2/organizations/acme/pipelines/app",
      headers: { authorization: "Bearer secret" },
    });
    expect(editor.json().provider).toEqual({
      id: "git",
      webhook_url: "http://api.test/webhooks/deliver/hook",
      settings: { build_tags: true, webhook_secret: "s3cret" },
    });
    const reader = await app.inject({
      method: "GET",
      url: "/v2/organizations/acme/pipelines/app",
      headers: { authorization: "Bearer reader" },
    });
    expect(reader.statusCode).toBe(200);
    expect(reader.json().provider).toEqual({ id: "git", webhook_url: "", settings: { build_tags: true } });
  });
});
