import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type AuthenticateAgentCredentialResponse, CredentialKind } from "@conveyor/proto/agents";
import {
  type CancelBuildRequest,
  type CancelStepRequest,
  type GetStepRequest,
  JobSchema,
  type PromiseJobFailureRequest,
  type UpdateStepRequest,
} from "@conveyor/proto/builds";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg } from "../testing/test-app.js";

// The agent's step and build commands through the gateway, on fake services: the credential names the job they
// act through, BUILDKITE_BUILD_ID must be its build, and what is not served is refused naming the field.
const acme = makeOrg("acme", "Acme");
const JOB = "44444444-0000-4000-8000-000000000001";
const BUILD = "55555555-0000-4000-8000-000000000001";
const OTHER_BUILD = "55555555-0000-4000-8000-000000000002";
const AGENT = "66666666-0000-4000-8000-000000000001";
const IDLE_AGENT = "66666666-0000-4000-8000-000000000002";
const PIPELINE = "77777777-0000-4000-8000-000000000001";
const LOCKED = "44444444-0000-4000-8000-000000000009";

type Credential = Omit<AuthenticateAgentCredentialResponse, "$typeName" | "$unknown">;
const base = { organizationId: acme.id, clusterId: "", tokenId: "t1", jobId: "", buildId: "" };
const credentials: Record<string, Credential> = {
  bkaj_job: { ...base, kind: CredentialKind.JOB, agentId: AGENT, jobId: JOB, buildId: BUILD },
  bkaa_agent: { ...base, kind: CredentialKind.AGENT, agentId: AGENT },
  bkaa_idle: { ...base, kind: CredentialKind.AGENT, agentId: IDLE_AGENT },
  bkat_reg: { ...base, kind: CredentialKind.REGISTRATION, agentId: "" },
};
const step = {
  id: "s-1",
  key: "tests",
  label: "Tests",
  type: "script",
  state: "running",
  outcome: "neutral",
  definitionJson: '{"command":"make test"}',
};

let app: FastifyInstance;
let calls: {
  get: GetStepRequest[];
  update: UpdateStepRequest[];
  cancel: CancelStepRequest[];
  builds: CancelBuildRequest[];
  promises: PromiseJobFailureRequest[];
};
beforeEach(async () => {
  calls = { get: [], update: [], cancel: [], builds: [], promises: [] };
  ({ app } = await buildTestApp(
    { orgs: [acme], users: [], tokens: new Map(), revoked: [] },
    {
      agents: {
        authenticateAgentCredential(req) {
          const found = credentials[req.secret];
          if (!found) throw new ConnectError("nope", Code.Unauthenticated);
          return found;
        },
        getAgent: (req) => ({ agent: { id: req.id, currentJobId: req.id === AGENT ? JOB : "" } }),
        acquireJob: (req) => {
          if (req.jobId === LOCKED) return { locked: true };
          if (req.jobId !== JOB) throw new ConnectError("No job found", Code.NotFound);
          return {
            job: { id: JOB, buildId: BUILD, buildNumber: 7, state: "accepted", priority: 0 },
            env: { BUILDKITE_JOB_ID: JOB, BUILDKITE_ORGANIZATION_SLUG: "acme", BUILDKITE_PIPELINE_SLUG: "web" },
            jobToken: "bkaj_acquired",
          };
        },
      },
      builds: {
        getJob: (req) => {
          if (req.jobId !== JOB) throw new ConnectError("No job found", Code.NotFound);
          return { job: create(JobSchema, { id: JOB, buildId: BUILD, pipelineId: PIPELINE, buildNumber: 7 }) };
        },
        getStep(req) {
          calls.get.push(req);
          if (req.ref?.step !== "tests" && req.ref?.step !== "s-1")
            throw new ConnectError("No step found", Code.NotFound);
          return { step };
        },
        updateStep(req) {
          calls.update.push(req);
          return { step };
        },
        cancelStep(req) {
          calls.cancel.push(req);
          return { step };
        },
        cancelBuild(req) {
          calls.builds.push(req);
          return {};
        },
        promiseJobFailure(req) {
          calls.promises.push(req);
          if (req.exitStatus === 4)
            throw new ConnectError("The job already promised exit status 3", Code.AlreadyExists);
          if (req.exitStatus === 5) throw new ConnectError("The job is passed", Code.FailedPrecondition);
          return {};
        },
      },
    },
  ));
});
afterEach(() => app.close());

const as = (secret: string) => ({ authorization: `Token ${secret}` });

describe("step get (POST /v3/steps/{step}/export)", () => {
  it("answers an attribute, or the whole step as JSON, through the credential's job", async () => {
    const label = await app.inject({
      method: "POST",
      url: "/v3/steps/tests/export",
      headers: as("bkaj_job"),
      payload: { attribute: "label", build_id: BUILD },
    });
    expect(label.statusCode).toBe(200);
    expect(label.json()).toEqual({ output: "Tests" });
    expect(calls.get[0]?.ref).toMatchObject({ jobId: JOB, step: "tests" });
    const whole = await app.inject({
      method: "POST",
      url: "/v3/steps/s-1/export",
      headers: as("bkaa_agent"),
      payload: { format: "json" },
    });
    expect(JSON.parse(whole.json().output)).toMatchObject({ id: "s-1", key: "tests", type: "command" });
  });

  it("finds nothing in another build, for an agent without a job, or for an unknown step", async () => {
    const other = await app.inject({
      method: "POST",
      url: "/v3/steps/tests/export",
      headers: as("bkaj_job"),
      payload: { attribute: "label", build_id: OTHER_BUILD },
    });
    expect(other.statusCode).toBe(404);
    const idle = await app.inject({
      method: "POST",
      url: "/v3/steps/tests/export",
      headers: as("bkaa_idle"),
      payload: {},
    });
    expect(idle.statusCode).toBe(404);
    const unknown = await app.inject({
      method: "POST",
      url: "/v3/steps/nope/export",
      headers: as("bkaj_job"),
      payload: { attribute: "label" },
    });
    expect(unknown.statusCode).toBe(404);
    expect(calls.get).toHaveLength(1);
    const registration = await app.inject({
      method: "POST",
      url: "/v3/steps/tests/export",
      headers: as("bkat_reg"),
      payload: {},
    });
    expect(registration.statusCode).toBe(401);
  });

  it("refuses unknown fields, formats and attributes naming them", async () => {
    for (const [payload, field] of [
      [{ attribute: "label", colour: "red" }, "colour"],
      [{ attribute: "label", format: "yaml" }, "format"],
      [{ attribute: "agents" }, "attribute"],
    ] as const) {
      const res = await app.inject({ method: "POST", url: "/v3/steps/tests/export", headers: as("bkaj_job"), payload });
      expect(res.statusCode).toBe(422);
      expect(JSON.stringify(res.json())).toContain(field);
    }
  });
});

describe("step update (PUT /v3/steps/{step})", () => {
  it("changes the label with append and the idempotency uuid", async () => {
    const res = await app.inject({
      method: "PUT",
      url: "/v3/steps/tests",
      headers: as("bkaj_job"),
      payload: { idempotency_uuid: "u-1", build_id: BUILD, attribute: "label", value: " (2)", append: true },
    });
    expect(res.statusCode).toBe(200);
    expect(calls.update[0]).toMatchObject({
      ref: { jobId: JOB, step: "tests" },
      label: " (2)",
      append: true,
      idempotencyUuid: "u-1",
    });
  });

  it("refuses other attributes naming them, and changes nothing", async () => {
    for (const attribute of ["priority", "notify", "parallelism"]) {
      const res = await app.inject({
        method: "PUT",
        url: "/v3/steps/tests",
        headers: as("bkaj_job"),
        payload: { attribute, value: "10" },
      });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ errors: [{ field: "attribute", code: expect.stringContaining(attribute) }] });
    }
    const missing = await app.inject({
      method: "PUT",
      url: "/v3/steps/tests",
      headers: as("bkaj_job"),
      payload: { value: "x" },
    });
    expect(missing.statusCode).toBe(422);
    expect(calls.update).toHaveLength(0);
  });
});

describe("step cancel and build cancel", () => {
  it("cancels a step and answers its uuid; refuses force naming it", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/v3/steps/tests/cancel",
      headers: as("bkaj_job"),
      payload: { build_id: BUILD, force: false, force_grace_period: 10 },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ uuid: "s-1" });
    const forced = await app.inject({
      method: "POST",
      url: "/v3/steps/tests/cancel",
      headers: as("bkaj_job"),
      payload: { build_id: BUILD, force: true, force_grace_period: 10 },
    });
    expect(forced.statusCode).toBe(422);
    expect(forced.json()).toMatchObject({ errors: [{ field: "force" }] });
    expect(calls.cancel).toHaveLength(1);
  });

  it("cancels the job's own build through the job, and nothing else", async () => {
    const res = await app.inject({ method: "POST", url: `/v3/builds/${BUILD}/cancel`, headers: as("bkaj_job") });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ uuid: BUILD });
    expect(calls.builds[0]).toMatchObject({ pipelineId: PIPELINE, number: 7, jobId: JOB });
    const other = await app.inject({
      method: "POST",
      url: `/v3/builds/${OTHER_BUILD}/cancel`,
      headers: as("bkaj_job"),
    });
    expect(other.statusCode).toBe(404);
    const idle = await app.inject({ method: "POST", url: `/v3/builds/${BUILD}/cancel`, headers: as("bkaa_idle") });
    expect(idle.statusCode).toBe(404);
    expect(calls.builds).toHaveLength(1);
  });
});

describe("job promise-failure (PUT /v3/jobs/{id}/promise_failure)", () => {
  it("answers 204, 409 for another promise and 422 for a job no longer running", async () => {
    const put = (payload: object, secret = "bkaj_job") =>
      app.inject({ method: "PUT", url: `/v3/jobs/${JOB}/promise_failure`, headers: as(secret), payload });
    const ok = await put({ exit_status: 3, reason: "tests failed" });
    expect(ok.statusCode).toBe(204);
    expect(calls.promises[0]).toMatchObject({ jobId: JOB, exitStatus: 3, reason: "tests failed" });
    expect((await put({ exit_status: 4 })).statusCode).toBe(409);
    expect((await put({ exit_status: 5 })).statusCode).toBe(422);
    expect((await put({ exit_status: "x" })).statusCode).toBe(422);
    expect((await put({ exit_status: 3 }, "bkaa_idle")).statusCode).toBe(404);
  });
});

describe("acquire-job (PUT /v3/jobs/{id}/acquire)", () => {
  it("answers the job object with its token, 423 with Retry-After while it waits, and only to an agent's token", async () => {
    const ok = await app.inject({ method: "PUT", url: `/v3/jobs/${JOB}/acquire`, headers: as("bkaa_agent") });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      id: JOB,
      state: "accepted",
      token: "bkaj_acquired",
      env: { BUILDKITE_JOB_ID: JOB },
    });
    const locked = await app.inject({ method: "PUT", url: `/v3/jobs/${LOCKED}/acquire`, headers: as("bkaa_agent") });
    expect(locked.statusCode).toBe(423);
    expect(locked.headers["retry-after"]).toBe("5");
    const unknown = await app.inject({
      method: "PUT",
      url: "/v3/jobs/44444444-0000-4000-8000-00000000000f/acquire",
      headers: as("bkaa_agent"),
    });
    expect(unknown.statusCode).toBe(404);
    expect(
      (await app.inject({ method: "PUT", url: `/v3/jobs/${JOB}/acquire`, headers: as("bkaj_job") })).statusCode,
    ).toBe(401);
  });
});
